#!/usr/bin/env python3
"""CTranslate2 decoding at the shape of a Loom config, timed like `loom bench decode`.

Builds a CTranslate2 Transformer (post-norm, shared and tied embeddings, the
sizes of a Loom TransformerConfig in protobuf text) with random weights, saves
it once per compute type under --model-dir, and times `translate_batch` on a
batch of random source ids for exactly --tgt-len target tokens (minimum and
maximum decoding length both --tgt-len, so no sentence stops early). Prints
one JSON line with the fields `loom bench decode` prints: tokens_per_s is
batch * tgt_len / the median seconds per batch, whatever the beam.

Needs the `ctranslate2` module (../shared/peers/build_ct2.sh builds it; put
its folder on PYTHONPATH).

  bench/ct2_bench.py --config bench/configs/base-8k.txtpb --batch 32 \
      --src-len 30 --tgt-len 30 --beam 4 --compute-type int8 --threads 2
"""

import argparse
import json
import os
import re
import resource
import statistics
import sys
import time

import numpy as np


def read_config(path):
    """The integer and boolean fields of a TransformerConfig text proto."""
    fields = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            m = re.match(r"(\w+)\s*:\s*(\S+)", line)
            if m:
                fields[m.group(1)] = m.group(2)
    config = {
        "d_model": int(fields["d_model"]),
        "heads": int(fields["heads"]),
        "d_ff": int(fields["d_ff"]),
        "encoder_layers": int(fields["encoder_layers"]),
        "decoder_layers": int(fields["decoder_layers"]),
        "src_vocab": int(fields["src_vocab"]),
        "tgt_vocab": int(fields["tgt_vocab"]),
    }
    if fields.get("norm", "POST") != "POST":
        sys.exit("ct2_bench.py: only post-norm configs are built")
    if config["src_vocab"] != config["tgt_vocab"]:
        sys.exit("ct2_bench.py: the vocabulary must be shared")
    return config


def vocabulary(size):
    # Ids 0-3 as Loom numbers them: padding, unknown, bos, eos.
    return ["<blank>", "<unk>", "<s>", "</s>"] + ["t%d" % i for i in range(4, size)]


def build_model(config, out_dir, compute_type, seed):
    import ctranslate2
    from ctranslate2.specs import model_spec, transformer_spec

    rng = np.random.default_rng(seed)
    d, ff, vocab = config["d_model"], config["d_ff"], config["src_vocab"]
    spec = transformer_spec.TransformerSpec.from_config(
        (config["encoder_layers"], config["decoder_layers"]),
        config["heads"],
        pre_norm=False,
    )

    def normal(*shape, scale=None):
        scale = scale if scale is not None else 1.0 / np.sqrt(shape[-1])
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    embedding = normal(vocab, d, scale=d**-0.5)

    # Every weight the spec leaves unset, by the role its scope names.
    def visit(spec_, name, value):
        attr = name.rsplit("/", 1)[-1]
        if value is not None:
            return
        if attr == "gamma":
            setattr(spec_, attr, np.ones(d, np.float32))
        elif attr == "beta":
            setattr(spec_, attr, np.zeros(d, np.float32))
        elif "embeddings" in name or "projection" in name:
            setattr(spec_, attr, embedding)
        elif attr == "weight":
            rows = {
                "self_attention/linear_0": 3 * d,
                "attention/linear_1": 2 * d,
                "ffn/linear_0": ff,
            }
            scope = name.rsplit("/", 1)[0]
            out = next((r for k, r in rows.items() if scope.endswith(k)), d)
            inp = ff if scope.endswith("ffn/linear_1") else d
            setattr(spec_, attr, normal(out, inp))

    model_spec.visit_spec(spec, visit)
    # Biases are optional in the spec: give every linear one, as Loom has.
    def biases(spec_, name, value):
        attr = name.rsplit("/", 1)[-1]
        if attr == "bias" and isinstance(value, str):
            weight = getattr(spec_, "weight")
            setattr(spec_, attr, np.zeros(weight.shape[0], np.float32))

    model_spec.visit_spec(spec, biases)
    tokens = vocabulary(vocab)
    spec.register_source_vocabulary(tokens)
    spec.register_target_vocabulary(tokens)
    spec.validate()
    spec.optimize(quantization=None if compute_type == "float32" else compute_type)
    spec.save(out_dir)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True)
    p.add_argument("--model-dir", default="/tmp/loom-ct2-models")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--src-len", type=int, default=30)
    p.add_argument("--tgt-len", type=int, default=30)
    p.add_argument("--beam", type=int, default=1)
    p.add_argument("--compute-type", default="float32",
                   choices=["float32", "int8", "bfloat16", "int8_bfloat16"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()

    import ctranslate2

    config = read_config(a.config)
    # The weights are saved in float32 and converted at load to the compute
    # type, as a user loading one model at several precisions would.
    name = "%s-%d" % (os.path.basename(a.config).split(".")[0], a.seed)
    model_dir = os.path.join(a.model_dir, name)
    if not os.path.exists(os.path.join(model_dir, "model.bin")):
        os.makedirs(model_dir, exist_ok=True)
        build_model(config, model_dir, "float32", a.seed)
    translator = ctranslate2.Translator(
        model_dir, device="cpu", compute_type=a.compute_type,
        inter_threads=1, intra_threads=a.threads)

    rng = np.random.default_rng(7)
    tokens = vocabulary(config["src_vocab"])
    source = [[tokens[i] for i in rng.integers(4, config["src_vocab"], a.src_len)]
              for _ in range(a.batch)]

    def step():
        results = translator.translate_batch(
            source, beam_size=a.beam, max_batch_size=a.batch,
            max_decoding_length=a.tgt_len, min_decoding_length=a.tgt_len,
            return_scores=False)
        lengths = {len(r.hypotheses[0]) for r in results}
        if lengths != {a.tgt_len}:
            sys.exit("ct2_bench.py: hypotheses of lengths %s, not %d"
                     % (sorted(lengths), a.tgt_len))

    for _ in range(a.warmup):
        step()
    ms = []
    for _ in range(a.steps):
        start = time.perf_counter()
        step()
        ms.append((time.perf_counter() - start) * 1000)
    ms.sort()
    median = statistics.median(ms)
    tokens_per_step = a.batch * a.tgt_len
    line = {
        "system": "ctranslate2",
        "version": ctranslate2.__version__,
        "mode": "decode",
        "compute_type": a.compute_type,
        "cpu_isa": os.environ.get("CT2_FORCE_CPU_ISA", "default"),
        "batch": a.batch,
        "src_len": a.src_len,
        "tgt_len": a.tgt_len,
        "beam": a.beam,
        "threads": a.threads,
        "steps": a.steps,
        "tokens_per_step": float(tokens_per_step),
        "tokens_per_s": tokens_per_step / (median / 1000),
        "step_ms_median": median,
        "step_ms_min": ms[0],
        "step_ms_max": ms[-1],
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }
    print(json.dumps(line, sort_keys=True))


if __name__ == "__main__":
    main()
