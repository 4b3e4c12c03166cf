"""Loom: a compiler and runtime for Transformer models, from Python.

Translate with a model folder::

    import loom
    t = loom.Translator("model")            # what `loom export` or `loom train` wrote
    for r in t.translate(["A dog runs."], beam=4, return_scores=True):
        print(r.hypotheses[0], r.scores[0])

Compile a model and run its entry points on numpy arrays::

    program = loom.compile(preset="tiny", max_tokens=256, max_len=32, max_batch=8)
    session = loom.Session(program)
    session.init_parameters(seed=1)
    out = session.run("token_log_probs", src=src_ids, tgt=tgt_ids)   # int32 [batch, len]

Train, watching each metrics record as it comes::

    loom.train(preset="tiny", train=("train.en", "train.de"), out="run",
               steps=100, callback=print)

Failures raise :class:`loom.Error` subclasses (``loom.errors``) carrying
Loom's message; calls that decode, train or run release the GIL, and Ctrl-C
stops a long ``translate`` or ``train`` cleanly.
"""

from . import errors
from ._loom import (
    Program,
    Session,
    StateView,
    TranslationResult,
    __version__,
)
from . import _loom
from .errors import (
    CompileError,
    CorruptError,
    Error,
    InternalError,
    InvalidArgumentError,
    IoError,
    NotFoundError,
    OutOfMemoryError,
    UnsupportedError,
)

__all__ = [
    "Translator",
    "TranslationResult",
    "Program",
    "Session",
    "StateView",
    "compile",
    "train",
    "Error",
    "InvalidArgumentError",
    "NotFoundError",
    "IoError",
    "CorruptError",
    "UnsupportedError",
    "OutOfMemoryError",
    "InternalError",
    "CompileError",
    "errors",
    "__version__",
]


class Translator:
    """A translator folder opened for translating.

    ``folder`` is what ``loom export`` writes, or a ``loom train`` run
    directory. ``device`` is ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (None: the
    one the executable is for); ``threads`` CPU threads (None: one per
    hardware thread) are split over ``workers`` decoders, which translate
    batches side by side. ``precision`` (``"fp32"``, ``"int8"``, ``"bf16"``)
    asks for the decoder of that precision: a model directory keeps one per
    precision and compiles it the first time, as ``loom translate --model
    DIR --precision P`` does; None takes the folder's ``translate.loomx`` as
    it is. ``executable`` and ``weights`` replace the folder's files.

    A Translator may be shared between threads: its calls run one at a
    time, each on all its threads, without holding the GIL.
    """

    def __init__(self, folder, device=None, threads=None, precision=None,
                 workers=1, executable=None, weights=None):
        folder = str(folder)
        if precision is None:
            self._impl = _loom.Translator(
                folder, device=device, threads=threads, workers=workers,
                executable=None if executable is None else str(executable),
                weights=None if weights is None else str(weights))
        else:
            if executable is not None:
                raise InvalidArgumentError(
                    "give a precision or an executable, not both: the "
                    "precision chooses the executable")
            self._impl = _loom._open_model_translator(
                folder, str(precision), device, threads, workers,
                None if weights is None else str(weights))
        self.folder = folder

    def translate(self, sentences, beam=4, alpha=0.6, nbest=1,
                  max_len_ratio=1.5, return_scores=False, **options):
        """Translates a list of sentences; per sentence a
        :class:`TranslationResult` with its ``nbest`` hypotheses, best first
        (``scores`` and ``log_probs`` too with ``return_scores``).

        Every decoding option of the C API is a keyword argument: ``batch``,
        ``batch_tokens``, ``split_long``, ``min_length``, ``max_length``,
        ``repetition_penalty``, ``no_repeat_ngram_size``, ``forbidden``,
        ``target_prefixes``, ``length_penalty_power``, ``sampling_topk``,
        ``sampling_topp``, ``sampling_temperature``, ``seed``,
        ``alignments``, ``alignment_layer`` (see ``_loom.Translator.translate``
        for what each does). A sentence's translation does not depend on the
        others in the call.
        """
        return self._impl.translate(
            sentences, beam=beam, alpha=alpha, nbest=nbest,
            max_len_ratio=max_len_ratio, return_scores=return_scores,
            **options)

    def translate_file(self, source, output, **options):
        """Translates the file ``source``, one sentence per line, into
        ``output`` exactly as ``loom translate --input source`` prints them
        (``with_scores=True`` puts each score and a tab first). The output
        file appears only once whole. Options are :meth:`translate`'s."""
        return self._impl.translate_file(str(source), str(output), **options)

    @property
    def workers(self):
        """Decoders translating batches side by side."""
        return self._impl.workers

    @property
    def max_source_tokens(self):
        """The longest source, eos included, the executable takes."""
        return self._impl.max_source_tokens

    def __repr__(self):
        return "<loom.Translator %r, %d worker(s)>" % (self.folder,
                                                      self.workers)


def compile(preset=None, config=None, onnx=None, target="cpu", cpu=None,
            precision=None, max_tokens=4096, max_len=256, max_batch=256,
            dump_dir=None, cuda_arch="sm_90", warmup=4000, lr_scale=1.0,
            clip_norm=0.0, loss=None, loss_output=None, label_smoothing=0.0,
            d_model=0, data_parallel=False):
    """Compiles a model into a :class:`Program`, as ``loom compile`` does.

    The model is a ``preset`` name (``"tiny"``, ``"multi30k"``, ``"base"``,
    ...), a ``config`` file (.pbtxt), or an ``onnx`` file (compiled for
    inference, or for training with ``loss="cross-entropy"`` on
    ``loss_output``). ``target`` is ``"cpu"`` (code for ``cpu``: None or
    ``"native"`` for this machine, or a portable level such as
    ``"x86-64-v3"``) or ``"cuda"`` (for ``cuda_arch``). ``precision`` is
    ``"fp32"`` (None), ``"int8"`` or ``"bf16"``. Memory is planned for
    batches of at most ``max_tokens`` tokens, ``max_len`` positions and
    ``max_batch`` sentences; ``dump_dir`` keeps the module after every pass.
    ``warmup``, ``lr_scale`` and ``clip_norm`` are compiled into
    ``@train_step``. Raises :class:`CompileError` when the compiler refuses.
    """
    data = _loom._compile(
        preset or "", str(config) if config else "",
        str(onnx) if onnx else "", target, cpu or "native", cuda_arch,
        precision or "fp32", max_tokens, max_len, max_batch, warmup,
        lr_scale, clip_norm, loss or "", loss_output or "", label_smoothing,
        d_model, data_parallel, str(dump_dir) if dump_dir else "")
    return Program.from_bytes(data)


def train(train, out, *, preset=None, config=None, prepared=None,
          valid=None, steps=None, epochs=None, time_limit=None, threads=None,
          device=None, seed=None, max_tokens=None, max_sentences=None,
          warmup=None, lr_scale=None, clip_norm=None, precision=None,
          vocab_size=0, bucket_mb=25.0, valid_every=None, log_every=None,
          keep=None, resume=False, callback=None):
    """Trains a translator into the run directory ``out``, as ``loom train``
    (with ``preset`` or ``config``: a vocabulary is trained on the corpus
    and the model compiled here) or ``loom-train`` (with ``prepared``, a
    folder ``loom prepare`` wrote) do: the same seed gives the same run.

    ``train`` and ``valid`` are (source file, target file) pairs. The run
    stops after ``steps`` steps, ``epochs`` epochs or ``time_limit`` seconds;
    it validates and checkpoints every ``valid_every`` steps (default: each
    epoch) and logs every ``log_every``. ``seed``, ``max_tokens``,
    ``max_sentences``, ``warmup``, ``lr_scale``, ``clip_norm`` and
    ``precision`` are the run's settings (``loom train``'s defaults when
    None; with ``resume``, the checkpoint's). ``callback``, when given, is
    called with every record ``out/metrics.jsonl`` gets, as a dict (``type``
    ``"train"``: step, loss, lr, tokens_per_s, ...; ``"valid"``: valid_nll,
    valid_bleu, ...). An exception the callback raises, like Ctrl-C, stops
    the run after a checkpoint and is raised again.

    Returns how the run ended: ``step``, ``epoch``, ``saved`` (where the
    parameters went), ``best_step`` and ``best_bleu``.
    """
    common = dict(train=[str(p) for p in train], out=str(out),
                  valid=None if valid is None else [str(p) for p in valid],
                  steps=steps, epochs=epochs, time_limit=time_limit,
                  threads=threads, device=device, seed=seed,
                  max_tokens=max_tokens, max_sentences=max_sentences,
                  warmup=warmup, lr_scale=lr_scale, clip_norm=clip_norm,
                  precision=precision, valid_every=valid_every,
                  log_every=log_every, keep=keep, resume=resume)
    if prepared is not None:
        if preset is not None or config is not None:
            raise InvalidArgumentError(
                "give a prepared folder or a preset/config, not both")
        return _loom._train_prepared(str(prepared), callback, **common)
    return _loom._train_compiling(preset or "", str(config) if config else "",
                                  vocab_size, bucket_mb, callback, **common)
