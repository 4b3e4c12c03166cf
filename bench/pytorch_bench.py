#!/usr/bin/python3
"""Times PyTorch's nn.Transformer on the CPU: the peer of `loom bench`.

    pytorch_bench.py train|decode --preset P --batch B --src-len S \\
        --tgt-len T --steps K --warmup W --threads N [--check]
    pytorch_bench.py config --preset P

`train` times K training steps (after W untimed ones); a step is
zero_grad, forward, label-smoothed cross entropy, backward and one Adam
update on B sentence pairs, in float32 with dropout active. `decode` times K
greedy decodings (after W untimed ones); a decoding is the encoder on B
sources and then exactly T greedy steps with a key/value cache (no early
stop). Either prints one JSON line with the keys `loom bench` prints:

    tokens_per_s          tokens_per_step / median step time
    step_ms_median, step_ms_min, step_ms_max, step_ms_p10, step_ms_p90
    model_gflops_per_step see model_flops() below
    model_gflops_per_s    model_gflops_per_step / median step time
    tokens_per_step       train: B*(S+T) source and target tokens;
                          decode: B*T generated tokens
    peak_rss_bytes        the process's high-water resident set (ru_maxrss)

plus torch_version, threads, blas and the run's parameters. `config` prints
the preset's sizes as JSON (cpu_bench.sh passes them to gemm_bench).

The model is PyTorch's own nn.Transformer (batch_first, ReLU, the preset's
sizes, dropout and pre/post norm; the final encoder and decoder norms are
removed when the preset has none), embeddings scaled by sqrt(d_model) plus
sinusoidal positions (with dropout on the sum), and a generator
Linear(d_model, vocab) with bias; source and target embeddings are one
table and the generator's weight is that table when the preset shares and
ties them, as Loom does. Token ids are drawn in [4, vocab) and every
sentence has exactly S (T) tokens, so there is no padding and no padding
mask is passed (the loss still ignores id 0).
Adam uses betas (0.9, 0.98) and eps 1e-9 with the learning rate of Loom's
schedule, d_model^-0.5 * min(step^-0.5, step * 4000^-1.5), set every step.

The decoder's cache is written here on top of nn.Transformer's weights: per
layer the self-attention keys and values of earlier positions are kept and
the new position's are appended, the cross-attention keys and values of the
encoder output are projected once, and each step runs every projection only
for the new position. `--check` (decode) first holds the cached decoder
against naive greedy decoding that reruns the whole nn.Transformer decoder
on the prefix every step (in eval mode), in float64 and in float32: the
tokens must be equal and the logits agree to rounding, else it exits 1.

Threads: OMP_NUM_THREADS and OPENBLAS_NUM_THREADS are set to --threads
before torch is imported (OpenBLAS sizes its pool when it is loaded), then
torch.set_num_threads(N) and torch.set_num_interop_threads(1). Run it with
Debian's python3 (python3-torch, which calls OpenBLAS for its GEMMs).
"""
import argparse
import json
import math
import os
import re
import resource
import sys
import time

PRESETS = {
    # The presets of frontend/Config.cpp.
    "tiny": dict(d_model=32, heads=2, d_ff=64, encoder_layers=2,
                 decoder_layers=2, src_vocab=32, tgt_vocab=32, dropout=0.0,
                 label_smoothing=0.0, norm="POST", final_norm=False,
                 share_embeddings=False, tie_output=False),
    "small": dict(d_model=256, heads=4, d_ff=1024, encoder_layers=3,
                  decoder_layers=3, src_vocab=8000, tgt_vocab=8000,
                  dropout=0.1, label_smoothing=0.1, norm="PRE",
                  final_norm=True, share_embeddings=True, tie_output=True),
    "base": dict(d_model=512, heads=8, d_ff=2048, encoder_layers=6,
                 decoder_layers=6, src_vocab=37000, tgt_vocab=37000,
                 dropout=0.1, label_smoothing=0.1, norm="POST",
                 final_norm=False, share_embeddings=True, tie_output=True),
    "big": dict(d_model=1024, heads=16, d_ff=4096, encoder_layers=6,
                decoder_layers=6, src_vocab=37000, tgt_vocab=37000,
                dropout=0.3, label_smoothing=0.1, norm="POST",
                final_norm=False, share_embeddings=True, tie_output=True),
}
for _c in PRESETS.values():
    _c.update(layer_norm_eps=1e-5, max_len=256)

PAD, BOS = 0, 2
FIRST_WORD = 4  # Ids 0-3 are pad, unk, bos, eos.
WARMUP_STEPS = 4000  # Loom's default schedule.


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Times PyTorch's nn.Transformer on the CPU (peer of "
                    "`loom bench`); prints one JSON line.")
    p.add_argument("mode", choices=["train", "decode", "config"])
    p.add_argument("--preset", choices=sorted(PRESETS), default="base")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--src-len", type=int, default=30)
    p.add_argument("--tgt-len", type=int, default=30)
    p.add_argument("--steps", type=int, default=None,
                   help="timed steps (default: train 20, decode 5)")
    p.add_argument("--warmup", type=int, default=None,
                   help="untimed steps first (default: train 3, decode 1)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="train: bf16 runs the step under CPU bf16 autocast "
                        "(the loss in float32), as loom's --precision bf16")
    p.add_argument("--check", action="store_true",
                   help="decode: first check the cached greedy decoder "
                        "against naive greedy decoding")
    a = p.parse_args(argv)
    if a.steps is None:
        a.steps = 20 if a.mode == "train" else 5
    if a.warmup is None:
        a.warmup = 3 if a.mode == "train" else 1
    for name in ("batch", "src_len", "tgt_len", "steps", "threads"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if a.warmup < 0:
        p.error("--warmup must not be negative")
    longest = max(a.src_len, a.tgt_len)
    if longest > PRESETS[a.preset]["max_len"]:
        p.error(f"lengths above the preset's max_len "
                f"({PRESETS[a.preset]['max_len']}): {longest}")
    return a


# Imported as a module (bench/pytorch_translate.py uses the model), the
# importer sets the threads itself.
ARGS = parse_args(sys.argv[1:]) if __name__ == "__main__" else None
if ARGS and ARGS.mode != "config":
    # Before torch loads OpenBLAS (pthreads), which sizes its pool on load.
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = str(ARGS.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


# --- model FLOPs, the same definition as `loom bench` -----------------------

def gemm_flops(m, n, k):
    """2*M*N*K: one multiply and one add per term of an M x K by K x N GEMM."""
    return 2 * m * n * k


def attention_flops(batch, heads, q_len, k_len, head_dim):
    """QK^T and PV of one attention: 2 * 2*B*H*Sq*Sk*Dh."""
    return 2 * gemm_flops(batch * heads * q_len, k_len, head_dim)


def model_flops(c, mode, batch, src_len, tgt_len, beam=1):
    """Model FLOPs of one `train` or `decode` step (2*M*N*K per GEMM).

    Only GEMMs count: every linear projection (q, k, v and output of each
    attention, both FFN linears, the generator over the whole vocabulary)
    and the two matmuls of each attention, QK^T and PV, at their full
    Sq x Sk (the causal mask halves no work here). Embeddings, norms,
    softmax, the loss and Adam count nothing.

    train: 3 x the teacher-forced forward over B*S source and B*T target
      tokens (the backward's dX and dW GEMMs are twice the forward's); the
      generator runs at all B*T target positions.
    decode: the encoder forward once; the cross-attention keys and values
      of the encoder output, projected once per decoder layer; then for each
      of the T steps the decoder for one new position per sentence:
      self-attention over the positions so far (1..T, the new one
      included), cross-attention over the S source positions, the FFN and
      the generator over the vocabulary; with a beam, each step runs for
      every hypothesis of every sentence (B*beam rows).
    """
    d, ff, h = c["d_model"], c["d_ff"], c["heads"]
    dh, vocab = d // h, c["tgt_vocab"]
    le, ld = c["encoder_layers"], c["decoder_layers"]
    ns = batch * src_len

    def ffn(tokens):
        return gemm_flops(tokens, ff, d) + gemm_flops(tokens, d, ff)

    encoder = le * (4 * gemm_flops(ns, d, d) + ffn(ns) +
                    attention_flops(batch, h, src_len, src_len, dh))
    memory_kv = ld * 2 * gemm_flops(ns, d, d)
    if mode == "train":
        nt = batch * tgt_len
        decoder = memory_kv + ld * (
            6 * gemm_flops(nt, d, d) + ffn(nt) +
            attention_flops(batch, h, tgt_len, tgt_len, dh) +
            attention_flops(batch, h, tgt_len, src_len, dh))
        generator = gemm_flops(nt, vocab, d)
        return 3 * (encoder + decoder + generator)
    total = encoder + memory_kv
    rows = batch * beam
    for position in range(1, tgt_len + 1):
        total += ld * (6 * gemm_flops(rows, d, d) + ffn(rows) +
                       attention_flops(rows, h, 1, position, dh) +
                       attention_flops(rows, h, 1, src_len, dh))
        total += gemm_flops(rows, vocab, d)
    return total


def tokens_per_step(mode, batch, src_len, tgt_len):
    """train: source plus target tokens; decode: generated tokens."""
    return batch * (src_len + tgt_len) if mode == "train" else batch * tgt_len


# --- the model --------------------------------------------------------------

def positional_encoding(length, d):
    pos = torch.arange(length, dtype=torch.float64)[:, None]
    i2 = torch.arange(0, d, 2, dtype=torch.float64)
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), i2 / d)
    pe = torch.zeros(length, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.float()


class Seq2Seq(nn.Module):
    """nn.Transformer with Loom's embeddings, positions and generator."""

    def __init__(self, c):
        super().__init__()
        d = c["d_model"]
        self.d = d
        self.transformer = nn.Transformer(
            d_model=d, nhead=c["heads"],
            num_encoder_layers=c["encoder_layers"],
            num_decoder_layers=c["decoder_layers"],
            dim_feedforward=c["d_ff"], dropout=c["dropout"],
            activation="relu", layer_norm_eps=c["layer_norm_eps"],
            batch_first=True, norm_first=c["norm"] == "PRE")
        if not c["final_norm"]:
            self.transformer.encoder.norm = None
            self.transformer.decoder.norm = None
        self.src_embed = nn.Embedding(c["src_vocab"], d)
        self.tgt_embed = nn.Embedding(c["tgt_vocab"], d)
        self.generator = nn.Linear(d, c["tgt_vocab"])
        # Scaled by sqrt(d) on lookup, so N(0, 1/d) gives unit-size inputs.
        nn.init.normal_(self.src_embed.weight, std=d ** -0.5)
        nn.init.normal_(self.tgt_embed.weight, std=d ** -0.5)
        if c["share_embeddings"]:
            self.tgt_embed.weight = self.src_embed.weight
        if c["tie_output"]:
            self.generator.weight = self.tgt_embed.weight
        self.register_buffer("pe", positional_encoding(c["max_len"], d))
        self.dropout = nn.Dropout(c["dropout"])

    def embed(self, table, ids, start=0):
        """dropout(table(ids) * sqrt(d) + the positions start ..
        start+len-1), the dropout only in training, as Loom embeds."""
        return self.dropout(table(ids) * math.sqrt(self.d) +
                            self.pe[start:start + ids.shape[1]])

    def encode(self, src):
        return self.transformer.encoder(self.embed(self.src_embed, src))

    def forward(self, src, tgt_in):
        """Teacher-forced logits, [B, T, vocab]."""
        t = tgt_in.shape[1]
        causal = self.transformer.generate_square_subsequent_mask(t).to(
            self.pe.dtype)
        h = self.transformer(self.embed(self.src_embed, src),
                             self.embed(self.tgt_embed, tgt_in),
                             tgt_mask=causal)
        return self.generator(h)


def loom_learning_rate(d_model, step):
    """lr_scale (1) * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)."""
    return d_model ** -0.5 * min(step ** -0.5, step * WARMUP_STEPS ** -1.5)


# --- greedy decoding --------------------------------------------------------

def _split_heads(x, heads):
    """[B, L, d] -> [B*H, L, d/H], contiguous (a copy unless L is 1)."""
    b, length, d = x.shape
    x = x.reshape(b, length, heads, d // heads).transpose(1, 2)
    return x.reshape(b * heads, length, d // heads)


def _merge_heads(x, batch):
    """[B*H, L, Dh] -> [B, L, H*Dh]."""
    bh, length, dh = x.shape
    x = x.view(batch, bh // batch, length, dh).transpose(1, 2)
    return x.reshape(batch, length, bh // batch * dh)


def _attend(q, k_t, v):
    """softmax(q k^T / sqrt(Dh)) v for q [B*H, Lq, Dh], k^T [B*H, Dh, Lk] and
    v [B*H, Lk, Dh], as nn.MultiheadAttention computes it (q scaled first).

    Every operand is a strided batch of matrices, so torch.bmm runs one
    batched GEMM rather than a loop over the B*H matrices."""
    scores = torch.bmm(q * q.shape[-1] ** -0.5, k_t)
    return torch.bmm(torch.softmax(scores, dim=-1), v)


class DecoderCache:
    """Keys and values of one decoder layer for a greedy decoding.

    Keys are kept transposed, [B*H, Dh, L], so that the scores are a plain
    batched GEMM; the self-attention cache is allocated for every position
    once and filled one position per step."""

    def __init__(self, layer, memory, max_len):
        attn = layer.multihead_attn
        d, heads = attn.embed_dim, attn.num_heads
        w, bias = attn.in_proj_weight, attn.in_proj_bias
        k = _split_heads(F.linear(memory, w[d:2 * d], bias[d:2 * d]), heads)
        self.cross_k_t = k.transpose(1, 2).contiguous()
        self.cross_v = _split_heads(F.linear(memory, w[2 * d:], bias[2 * d:]),
                                    heads)
        bh = memory.shape[0] * heads
        self.self_k_t = memory.new_empty(bh, d // heads, max_len)
        self.self_v = memory.new_empty(bh, max_len, d // heads)


def _self_attention_step(attn, x, cache, position):
    """The new position's self-attention over positions 0..position."""
    heads, batch = attn.num_heads, x.shape[0]
    q, k, v = F.linear(x, attn.in_proj_weight, attn.in_proj_bias).chunk(3, -1)
    cache.self_k_t[:, :, position] = _split_heads(k, heads)[:, 0]
    cache.self_v[:, position] = _split_heads(v, heads)[:, 0]
    out = _attend(_split_heads(q, heads),
                  cache.self_k_t[:, :, :position + 1],
                  cache.self_v[:, :position + 1])
    return attn.out_proj(_merge_heads(out, batch))


def _cross_attention_step(attn, x, cache):
    """The new position's attention over the encoder output."""
    d = attn.embed_dim
    q = F.linear(x, attn.in_proj_weight[:d], attn.in_proj_bias[:d])
    out = _attend(_split_heads(q, attn.num_heads), cache.cross_k_t,
                  cache.cross_v)
    return attn.out_proj(_merge_heads(out, x.shape[0]))


def _decoder_layer_step(layer, x, cache, position):
    """nn.TransformerDecoderLayer (eval) for one new position, [B, 1, d]."""
    def ff(y):
        return layer.linear2(torch.relu(layer.linear1(y)))

    if layer.norm_first:
        x = x + _self_attention_step(layer.self_attn, layer.norm1(x), cache,
                                     position)
        x = x + _cross_attention_step(layer.multihead_attn, layer.norm2(x),
                                      cache)
        return x + ff(layer.norm3(x))
    x = layer.norm1(x + _self_attention_step(layer.self_attn, x, cache,
                                             position))
    x = layer.norm2(x + _cross_attention_step(layer.multihead_attn, x, cache))
    return layer.norm3(x + ff(x))


def _next_logits(model, caches, last, position):
    """The logits [rows, vocab] after tokens `last` [rows, 1] at `position`,
    through the decoder layers' caches."""
    decoder = model.transformer.decoder
    x = model.embed(model.tgt_embed, last, start=position)
    for layer, cache in zip(decoder.layers, caches):
        x = _decoder_layer_step(layer, x, cache, position)
    if decoder.norm is not None:
        x = decoder.norm(x)
    return model.generator(x[:, 0])


def greedy_cached(model, src, steps, keep_logits=False):
    """Greedy decoding of exactly `steps` tokens with a key/value cache.

    Returns the tokens [B, steps] (and the logits of every step, [B, steps,
    vocab], with keep_logits). The model must be in eval mode.
    """
    decoder = model.transformer.decoder
    memory = model.encode(src)
    caches = [DecoderCache(layer, memory, steps) for layer in decoder.layers]
    batch = src.shape[0]
    tokens = torch.empty(batch, steps, dtype=torch.long, device=src.device)
    logits_seen = []
    last = torch.full((batch, 1), BOS, dtype=torch.long, device=src.device)
    for position in range(steps):
        logits = _next_logits(model, caches, last, position)
        if keep_logits:
            logits_seen.append(logits)
        tokens[:, position] = logits.argmax(-1)
        last = tokens[:, position:position + 1]
    if keep_logits:
        return tokens, torch.stack(logits_seen, 1)
    return tokens


def beam_cached(model, src, steps, beam):
    """Beam search of exactly `steps` tokens with a key/value cache: every
    hypothesis of every sentence one row, the `beam` best continuations of
    each sentence by total log-probability kept each step, and the rows'
    self-attention caches reordered to the hypotheses they continue (the
    cross-attention caches are the same for every hypothesis of a sentence).
    No hypothesis ends early: the fixed length `loom-bench --beam` decodes.
    Returns the best hypothesis of each sentence, [B, steps].
    """
    decoder = model.transformer.decoder
    batch = src.shape[0]
    memory = model.encode(src).repeat_interleave(beam, 0)
    caches = [DecoderCache(layer, memory, steps) for layer in decoder.layers]
    heads = decoder.layers[0].self_attn.num_heads
    rows = batch * beam
    scores = torch.full((batch, beam), -math.inf, device=src.device)
    scores[:, 0] = 0  # one hypothesis to begin with
    tokens = torch.empty(rows, steps, dtype=torch.long, device=src.device)
    last = torch.full((rows, 1), BOS, dtype=torch.long, device=src.device)
    first_row = torch.arange(batch, device=src.device)[:, None] * beam
    head = torch.arange(heads, device=src.device)
    for position in range(steps):
        logp = F.log_softmax(_next_logits(model, caches, last, position).float(),
                             -1)
        vocab = logp.shape[-1]
        total = (scores[:, :, None] + logp.view(batch, beam, vocab))
        scores, best = total.view(batch, beam * vocab).topk(beam, -1)
        source = (first_row + best // vocab).flatten()
        tokens = tokens[source]
        tokens[:, position] = (best % vocab).flatten()
        cache_rows = (source[:, None] * heads + head).flatten()
        for cache in caches:
            cache.self_k_t = cache.self_k_t[cache_rows]
            cache.self_v = cache.self_v[cache_rows]
        last = tokens[:, position:position + 1]
    return tokens.view(batch, beam, steps)[:, 0]


def greedy_naive(model, src, steps):
    """Greedy decoding that reruns nn.Transformer's decoder on the whole
    prefix every step; returns the tokens and every step's logits."""
    memory = model.encode(src)
    batch = src.shape[0]
    prefix = torch.full((batch, 1), BOS, dtype=torch.long)
    logits_seen = []
    for position in range(steps):
        length = position + 1
        causal = model.transformer.generate_square_subsequent_mask(
            length).to(memory.dtype)
        h = model.transformer.decoder(model.embed(model.tgt_embed, prefix),
                                      memory, tgt_mask=causal)
        logits = model.generator(h[:, -1])
        logits_seen.append(logits)
        prefix = torch.cat([prefix, logits.argmax(-1, keepdim=True)], 1)
    return prefix[:, 1:], torch.stack(logits_seen, 1)


def check_cache(model, src, steps):
    """Cached against naive greedy decoding, in float64 and float32.

    Tokens must be equal; logits must agree to 1e-9 (float64) and 1e-3
    (float32) relative to their largest magnitude. Returns a dict of the
    findings with "ok".
    """
    result = {"ok": True}
    for name, dtype, tolerance in (("float64", torch.float64, 1e-9),
                                   ("float32", torch.float32, 1e-3)):
        m = model.to(dtype).eval()
        with torch.inference_mode():
            fast, fast_logits = greedy_cached(m, src, steps, keep_logits=True)
            slow, slow_logits = greedy_naive(m, src, steps)
        equal = bool(torch.equal(fast, slow))
        diff = float((fast_logits - slow_logits).abs().max())
        scale = float(slow_logits.abs().max())
        ok = equal and diff <= tolerance * max(scale, 1.0)
        result[name] = {"tokens_equal": equal,
                        "tokens_compared": fast.numel(),
                        "max_abs_logit_diff": diff,
                        "max_abs_logit": scale}
        result["ok"] = result["ok"] and ok
    model.float()
    return result


# --- timing -----------------------------------------------------------------

def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def blas_description():
    """BLAS_INFO from torch's build settings and the BLAS library loaded."""
    config = torch.__config__.show()
    found = re.search(r"BLAS_INFO=([^,\s]+)", config)
    info = found.group(1) if found else "unknown"
    loaded = set()
    with open("/proc/self/maps") as f:
        for line in f:
            name = os.path.basename(line.split()[-1])
            if "blas" in name and ".so" in name:
                loaded.add(name)
    return f"BLAS_INFO={info}; loaded: {', '.join(sorted(loaded)) or 'none'}"


def openblas_threads():
    """OpenBLAS's own thread count, or None when it is not loaded."""
    import ctypes
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "libopenblas" in line}
    for path in sorted(paths):
        try:
            return int(ctypes.CDLL(path).openblas_get_num_threads())
        except (OSError, AttributeError):
            continue
    return None


def summarize(times_s):
    ms = np.asarray(times_s) * 1e3
    return {"step_ms_median": float(np.median(ms)),
            "step_ms_min": float(ms.min()),
            "step_ms_max": float(ms.max()),
            "step_ms_p10": float(np.percentile(ms, 10)),
            "step_ms_p90": float(np.percentile(ms, 90))}


def run_train(a, c, model, gen):
    vocab = c["tgt_vocab"]
    src = torch.randint(FIRST_WORD, c["src_vocab"], (a.batch, a.src_len),
                        generator=gen)
    tgt = torch.randint(FIRST_WORD, vocab, (a.batch, a.tgt_len + 1),
                        generator=gen)
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:].reshape(-1)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98),
                           eps=1e-9)
    losses = []

    def step(number):
        for group in opt.param_groups:
            group["lr"] = loom_learning_rate(c["d_model"], number)
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16,
                            enabled=a.precision == "bf16"):
            logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.float().reshape(-1, vocab), tgt_out,
                               ignore_index=PAD,
                               label_smoothing=c["label_smoothing"])
        loss.backward()
        opt.step()
        return loss

    times = []
    for i in range(a.warmup + a.steps):
        start = time.perf_counter()
        loss = step(i + 1)
        elapsed = time.perf_counter() - start
        losses.append(float(loss))
        if i >= a.warmup:
            times.append(elapsed)
    if not all(math.isfinite(x) for x in losses):
        raise SystemExit(f"error: a training loss is not finite: {losses}")
    return times, {"loss_first": losses[0], "loss_last": losses[-1]}


def run_decode(a, c, model, gen):
    src = torch.randint(FIRST_WORD, c["src_vocab"], (a.batch, a.src_len),
                        generator=gen)
    extra = {}
    if a.check:
        extra["cache_check"] = check_cache(model, src, a.tgt_len)
        if not extra["cache_check"]["ok"]:
            print(json.dumps(extra), flush=True)
            raise SystemExit("error: the cached greedy decoder disagrees with "
                             "naive greedy decoding")
    model.eval()
    times = []
    with torch.inference_mode():
        for i in range(a.warmup + a.steps):
            start = time.perf_counter()
            tokens = greedy_cached(model, src, a.tgt_len)
            elapsed = time.perf_counter() - start
            if i >= a.warmup:
                times.append(elapsed)
    assert tokens.shape == (a.batch, a.tgt_len)
    return times, extra


def main():
    a, c = ARGS, PRESETS[ARGS.preset]
    if a.mode == "config":
        print(json.dumps(dict(preset=a.preset, **c)))
        return
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed + 1)
    model = Seq2Seq(c)
    if a.mode == "train":
        times, extra = run_train(a, c, model, gen)
    else:
        times, extra = run_decode(a, c, model, gen)
    stats = summarize(times)
    seconds = stats["step_ms_median"] / 1e3
    tokens = tokens_per_step(a.mode, a.batch, a.src_len, a.tgt_len)
    gflops = model_flops(c, a.mode, a.batch, a.src_len, a.tgt_len) / 1e9
    result = {
        "framework": "pytorch",
        "mode": a.mode,
        "preset": a.preset,
        "precision": a.precision,
        "batch": a.batch,
        "src_len": a.src_len,
        "tgt_len": a.tgt_len,
        "steps": a.steps,
        "warmup": a.warmup,
        "tokens_per_s": tokens / seconds,
        **stats,
        "model_gflops_per_step": gflops,
        "model_gflops_per_s": gflops / seconds,
        "tokens_per_step": tokens,
        "peak_rss_bytes": peak_rss_bytes(),
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "blas_threads": openblas_threads(),
        "blas": blas_description(),
        **extra,
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
