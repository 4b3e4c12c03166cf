#!/usr/bin/python3
"""Holds `loom forward` and `loom grad` against PyTorch's nn.Transformer.

Usage: test_transformer.py LOOM_BINARY [--keep DIR] [--backend NAME ...]

For each configuration it draws seeded random weights, saves them as
safetensors under the names of nn.Transformer's state_dict (plus the
embeddings and generator), writes the config and a padded batch of ids, runs
the loom CLI, and compares its log-probabilities and gradients with the same
model evaluated in PyTorch in float64. `loom grad --precision bf16` (mixed
precision, emulated where the CPU has no bf16 units) is held against
PyTorch's CPU bf16 autocast on the same weights: against float64, Loom's
bf16 gradients must be at least as accurate as autocast's. Then it checks
that bad inputs are
refused with a message naming the problem. Prints one line per check and a
final "N passed, N failed"; exits 1 on any failure and 77 (skip) when torch
is not importable.
"""

import argparse
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

SKIP = 77
try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    print(f"SKIP: reference tests need numpy and torch ({e}); "
          f"run them with Debian's /usr/bin/python3")
    sys.exit(SKIP)

FORWARD_ATOL = 1e-4
GRAD_RTOL = 1e-4
TIMEOUT_S = 600

# (a) the paper's post-norm with final norms, label smoothing, and a config
# dropout that forward/grad must switch off; (b) pre-norm without final norms,
# one shared embedding that is also the output projection.
CONFIGS = {
    "a_post_final_norm": dict(
        d_model=16, heads=2, d_ff=32, encoder_layers=2, decoder_layers=1,
        src_vocab=23, tgt_vocab=19, dropout=0.1, label_smoothing=0.1,
        norm="POST", final_norm=True, share_embeddings=False,
        tie_output=False, max_len=32),
    "b_pre_shared_tied": dict(
        d_model=24, heads=4, d_ff=40, encoder_layers=1, decoder_layers=2,
        src_vocab=21, tgt_vocab=21, dropout=0.0, label_smoothing=0.0,
        layer_norm_eps=1e-6, norm="PRE", final_norm=False,
        share_embeddings=True, tie_output=True, max_len=16),
}

BOS, EOS = 2, 3


# --- safetensors, written and read with nothing but json/struct/numpy -------

DTYPES = {"F32": np.float32, "F64": np.float64, "I32": np.int32,
          "I64": np.int64, "F16": np.float16}


def save_safetensors(path, tensors):
    """Writes {name: np.ndarray} in sorted-name order, data 8-byte aligned."""
    header, offset, blobs = {}, 0, []
    names = {v: k for k, v in DTYPES.items()}
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        data = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": names[a.dtype.type], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def load_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    data = raw[8 + n:]
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = np.dtype(DTYPES[info["dtype"]]).newbyteorder("<")
        out[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(
            info["shape"]).astype(np.float64)
    return out


# --- the PyTorch model ------------------------------------------------------

def positional_encoding(length, d):
    pos = torch.arange(length, dtype=torch.float64)[:, None]
    i2 = torch.arange(0, d, 2, dtype=torch.float64)
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), i2 / d)
    pe = torch.zeros(length, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe


class Reference(nn.Module):
    """nn.Transformer's encoder/decoder stacks, named as in its state_dict."""

    def __init__(self, c):
        super().__init__()
        d, eps = c["d_model"], c.get("layer_norm_eps", 1e-5)
        pre = c["norm"] == "PRE"
        layer = dict(d_model=d, nhead=c["heads"], dim_feedforward=c["d_ff"],
                     dropout=0.0, activation="relu", layer_norm_eps=eps,
                     batch_first=True, norm_first=pre)
        final = (lambda: nn.LayerNorm(d, eps=eps)) if c["final_norm"] \
            else (lambda: None)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(**layer), c["encoder_layers"],
            norm=final(), enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(**layer), c["decoder_layers"],
            norm=final())
        self.src_embed = nn.Embedding(c["src_vocab"], d)
        self.tgt_embed = nn.Embedding(c["tgt_vocab"], d)
        self.generator = nn.Linear(d, c["tgt_vocab"])
        # Tying by sharing the Parameter lets autograd add up the gradients
        # of every use, which is what loom must report under the one name.
        if c["share_embeddings"]:
            self.tgt_embed.weight = self.src_embed.weight
        if c["tie_output"]:
            self.generator.weight = self.tgt_embed.weight
        self.d = d
        self.register_buffer("pe", positional_encoding(c["max_len"], d))

    def embed(self, table, ids):
        return table(ids) * math.sqrt(self.d) + self.pe[:ids.shape[1]]

    def forward(self, src, tgt_in):
        src_pad, tgt_pad = src == 0, tgt_in == 0
        t = tgt_in.shape[1]
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), 1)
        memory = self.encoder(self.embed(self.src_embed, src),
                              src_key_padding_mask=src_pad)
        out = self.decoder(self.embed(self.tgt_embed, tgt_in), memory,
                           tgt_mask=causal, tgt_key_padding_mask=tgt_pad,
                           memory_key_padding_mask=src_pad)
        return self.generator(out)


def stored_names(c):
    """The canonical parameter names of a config, per the tying rules."""
    names = {n for n, _ in Reference(c).named_parameters()}  # dedups ties
    if c["share_embeddings"]:
        names.discard("tgt_embed.weight")
    if c["tie_output"]:
        names.discard("generator.weight")
    names.add("src_embed.weight")
    if not c["share_embeddings"]:
        names.add("tgt_embed.weight")
    return names


def random_weights(c, seed):
    """Float32 weights with no 1s or 0s left where an init would put them."""
    rng = np.random.default_rng(seed)
    model = Reference(c).double()
    weights = {}
    for name, p in model.state_dict().items():
        if name == "pe" or name not in stored_names(c):
            continue
        shape = tuple(p.shape)
        if "norm" in name:
            base = 1.0 if name.endswith("weight") else 0.0
            a = base + 0.2 * rng.standard_normal(shape)
        elif "embed" in name:
            a = rng.standard_normal(shape) / math.sqrt(c["d_model"])
        elif name.endswith("bias"):
            a = 0.1 * rng.standard_normal(shape)
        else:
            a = rng.standard_normal(shape) / math.sqrt(shape[-1])
        weights[name] = a.astype(np.float32)
    return weights


def build_model(c, weights):
    model = Reference(c).double().train()  # train(): no fast path; dropout 0
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, a in weights.items():
            params[name].copy_(torch.from_numpy(a.astype(np.float64)))
    return model


def pad(rows):
    width = max(len(r) for r in rows)
    return torch.tensor([r + [0] * (width - len(r)) for r in rows])


def reference_outputs(c, weights, src_rows, tgt_rows):
    """Per-sentence log-probabilities and per-parameter loss gradients."""
    model = build_model(c, weights)
    src, tgt = pad(src_rows), pad(tgt_rows)
    logits = model(src, tgt[:, :-1])
    logp = F.log_softmax(logits, -1)
    targets = tgt[:, 1:]
    picked = logp.gather(-1, targets[..., None])[..., 0].detach()
    forward = [picked[b, :len(r) - 1].tolist() for b, r in enumerate(tgt_rows)]
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           targets.reshape(-1),
                           label_smoothing=c["label_smoothing"],
                           ignore_index=0)
    loss.backward()
    params = dict(model.named_parameters())
    grads = {n: params[n].grad.numpy() for n in weights}
    return model, forward, grads


# --- running loom and checking ---------------------------------------------

class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def record(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'PASS' if ok else 'FAIL'} {name}" +
              (f": {detail}" if detail else ""), flush=True)
        return ok


def run_loom(loom, args, env=None):
    try:
        p = subprocess.run([loom] + args, capture_output=True, text=True,
                           timeout=TIMEOUT_S,
                           env=dict(os.environ, **(env or {})))
    except subprocess.TimeoutExpired:
        return -1, "", f"timed out after {TIMEOUT_S}s"
    return p.returncode, p.stdout, p.stderr


def write_config(path, c, **override):
    fields = dict(c, **override)
    with open(path, "w") as f:
        for key, value in fields.items():
            if isinstance(value, bool):
                value = "true" if value else "false"
            elif isinstance(value, float):
                value = repr(value)
            f.write(f"{key}: {value}\n")


def write_ids(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(" ".join(map(str, r)) + "\n")


def make_batch(c, seed):
    """Unequal lengths so every row but the longest is padded."""
    rng = np.random.default_rng(seed)
    src_lens, tgt_lens = [6, 3, 8, 5], [5, 7, 3, 6]
    src = [list(rng.integers(4, c["src_vocab"], n - 1)) + [EOS]
           for n in src_lens]
    tgt = [[BOS] + list(rng.integers(4, c["tgt_vocab"], n - 2)) + [EOS]
           for n in tgt_lens]
    return ([[int(i) for i in r] for r in src],
            [[int(i) for i in r] for r in tgt])


def short(text, limit=300):
    """One line of at most `limit` characters, keeping the end (where a
    crash's output puts the message)."""
    text = " ".join(text.split())
    if not text:
        return "(no output)"
    return text if len(text) <= limit else "..." + text[-limit:]


def check_forward(checks, tag, out, expected):
    lines = out.strip("\n").split("\n") if out.strip() else []
    if not checks.record(f"{tag} line count", len(lines) == len(expected),
                         f"{len(lines)} lines, want {len(expected)}"):
        return
    for b, (line, want) in enumerate(zip(lines, expected)):
        try:
            got = [float(v) for v in line.split()]
        except ValueError:
            checks.record(f"{tag} sentence {b}", False,
                          f"unparsable line {short(line)!r}")
            continue
        if len(got) != len(want):
            checks.record(f"{tag} sentence {b}", False,
                          f"{len(got)} values, want {len(want)}")
            continue
        err = max(abs(g - w) for g, w in zip(got, want))
        checks.record(f"{tag} sentence {b}", err <= FORWARD_ATOL,
                      f"max abs error {err:.3g}")


def check_grads(checks, tag, path, expected):
    try:
        got = load_safetensors(path)
    except (OSError, ValueError, KeyError, struct.error) as e:
        checks.record(f"{tag} readable", False, str(e))
        return
    extra = sorted(set(got) - set(expected))
    checks.record(f"{tag} no extra tensors", not extra, ", ".join(extra))
    for name in sorted(expected):
        want = expected[name].astype(np.float64)
        if name not in got:
            checks.record(f"{tag} {name}", False, "missing")
            continue
        if got[name].shape != want.shape:
            checks.record(f"{tag} {name}", False,
                          f"shape {list(got[name].shape)}, want "
                          f"{list(want.shape)}")
            continue
        rel = np.linalg.norm(got[name] - want) / max(np.linalg.norm(want),
                                                     1e-30)
        checks.record(f"{tag} {name}", rel <= GRAD_RTOL,
                      f"rel error {rel:.3g} "
                      f"(|ref| {np.linalg.norm(want):.3g})")


def check_config(checks, loom, tmp, tag, c, backends, seed):
    weights = random_weights(c, seed)
    src_rows, tgt_rows = make_batch(c, seed + 1)
    model, forward, grads = reference_outputs(c, weights, src_rows, tgt_rows)

    # The reference itself must not depend on padding: each sentence alone
    # gives the log-probabilities it gets in the padded batch.
    worst = 0.0
    for b in range(len(src_rows)):
        s, t = torch.tensor([src_rows[b]]), torch.tensor([tgt_rows[b]])
        with torch.no_grad():
            alone = F.log_softmax(model(s, t[:, :-1]), -1).gather(
                -1, t[:, 1:, None])[0, :, 0].tolist()
        worst = max([worst] + [abs(a - w) for a, w in zip(alone, forward[b])])
    checks.record(f"{tag} pytorch padding invariance", worst < 1e-10,
                  f"max abs difference {worst:.3g}")

    cfg, wts = os.path.join(tmp, f"{tag}.pbtxt"), \
        os.path.join(tmp, f"{tag}.safetensors")
    src, tgt = os.path.join(tmp, f"{tag}.src"), os.path.join(tmp, f"{tag}.tgt")
    write_config(cfg, c)
    save_safetensors(wts, weights)
    write_ids(src, src_rows)
    write_ids(tgt, tgt_rows)
    common = ["--config", cfg, "--weights", wts, "--src-ids", src,
              "--tgt-ids", tgt]

    for backend in backends:
        extra = ["--backend", backend] if backend != "default" else []
        ftag = f"{tag} forward[{backend}]"
        rc, out, err = run_loom(loom, ["forward"] + common + extra)
        if checks.record(f"{ftag} runs", rc == 0,
                         f"exit {rc}: {short(err + out)}" if rc else ""):
            check_forward(checks, ftag, out, forward)

    for backend in backends:
        extra = ["--backend", backend] if backend != "default" else []
        grad_path = os.path.join(tmp, f"{tag}.{backend}.grad.safetensors")
        gtag = f"{tag} grad[{backend}]"
        rc, out, err = run_loom(loom, ["grad"] + common +
                                ["--out", grad_path] + extra)
        if checks.record(f"{gtag} runs", rc == 0,
                         f"exit {rc}: {short(err + out)}" if rc else ""):
            check_grads(checks, gtag, grad_path, grads)
    check_bf16(checks, loom, tmp, tag, c, (cfg, wts, src, tgt, weights),
               grads, backends)
    return cfg, wts, src, tgt, weights


def autocast_grads(c, weights, src_rows, tgt_rows):
    """The loss's gradients with the model in float32 under PyTorch's CPU
    bf16 autocast (its products in bf16, the loss in float32)."""
    model = build_model(c, weights).float()
    src, tgt = pad(src_rows), pad(tgt_rows)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(src, tgt[:, :-1])
    loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                           tgt[:, 1:].reshape(-1),
                           label_smoothing=c["label_smoothing"],
                           ignore_index=0)
    loss.backward()
    params = dict(model.named_parameters())
    return {n: params[n].grad.double().numpy() for n in weights}


def check_bf16(checks, loom, tmp, tag, c, files, exact, backends):
    """Loom's bf16 step against autocast's, both measured from float64: the
    overall error (all gradients as one vector) no larger than autocast's,
    and each gradient's within autocast's worst. Autocast rounds more (the
    products' results, attention's products), so Loom should be closer."""
    cfg, wts, src, tgt, weights = files
    src_rows = [[int(x) for x in l.split()] for l in open(src)]
    tgt_rows = [[int(x) for x in l.split()] for l in open(tgt)]
    theirs = autocast_grads(c, weights, src_rows, tgt_rows)

    def rel(a, b):
        return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)

    def overall(g):
        return math.sqrt(
            sum(np.linalg.norm(g[n] - exact[n]) ** 2 for n in exact) /
            sum(np.linalg.norm(exact[n]) ** 2 for n in exact))

    their_worst = max(rel(theirs[n], exact[n]) for n in exact)
    for backend in backends:
        extra = ["--backend", backend] if backend != "default" else []
        path = os.path.join(tmp, f"{tag}.{backend}.bf16.safetensors")
        btag = f"{tag} grad bf16[{backend}]"
        rc, out, err = run_loom(
            loom, ["grad", "--config", cfg, "--weights", wts, "--src-ids",
                   src, "--tgt-ids", tgt, "--out", path, "--precision",
                   "bf16"] + extra, env={"LOOM_CPU_EMULATE_BF16": "1"})
        if not checks.record(f"{btag} runs", rc == 0,
                             f"exit {rc}: {short(err + out)}" if rc else ""):
            continue
        ours = load_safetensors(path)
        if not checks.record(f"{btag} every gradient",
                             set(ours) == set(exact)):
            continue
        # Not fp32's gradients: the step rounds something.
        fp32_like = max(rel(ours[n], exact[n]) for n in exact) < 1e-5
        checks.record(f"{btag} rounds", not fp32_like,
                      "its gradients are float32's" if fp32_like else "")
        mine, theirs_overall = overall(ours), overall(theirs)
        checks.record(f"{btag} overall as accurate as autocast",
                      mine <= theirs_overall,
                      f"error {mine:.3g} against float64, autocast's "
                      f"{theirs_overall:.3g}")
        worst, name = max((rel(ours[n], exact[n]), n) for n in exact)
        checks.record(f"{btag} worst gradient within autocast's worst",
                      worst <= their_worst,
                      f"{name} {worst:.3g}, autocast's worst "
                      f"{their_worst:.3g}")


def expect_refusal(checks, loom, name, args, must_mention):
    rc, out, err = run_loom(loom, args)
    message = (err + out).strip()
    ok = rc > 0 and must_mention in message
    detail = f"exit {rc}, message {short(message)!r}"
    if rc < 0:
        detail += " (killed by a signal or timed out: a crash?)"
    elif must_mention not in message:
        detail += f" does not mention {must_mention!r}"
    checks.record(f"error: {name}", ok, detail)


def check_errors(checks, loom, tmp, c, files):
    cfg, wts, src, tgt, weights = files
    base = ["--config", cfg, "--weights", wts, "--src-ids", src,
            "--tgt-ids", tgt]

    def with_(flag, value):
        args = list(base)
        args[args.index(flag) + 1] = value
        return ["forward"] + args

    bad_src = os.path.join(tmp, "oov.src")
    write_ids(bad_src, [[5, 6, 3], [7, c["src_vocab"], 3]])
    expect_refusal(checks, loom, "source id out of vocabulary",
                   with_("--src-ids", bad_src), str(c["src_vocab"]))
    bad_tgt = os.path.join(tmp, "oov.tgt")
    write_ids(bad_tgt, [[BOS, 5, EOS], [BOS, c["tgt_vocab"] + 7, EOS]])
    expect_refusal(checks, loom, "target id out of vocabulary",
                   with_("--tgt-ids", bad_tgt), str(c["tgt_vocab"] + 7))

    missing = "decoder.layers.0.linear1.weight"
    path = os.path.join(tmp, "missing.safetensors")
    save_safetensors(path, {k: v for k, v in weights.items() if k != missing})
    expect_refusal(checks, loom, "missing weight",
                   with_("--weights", path), missing)

    # Same element count, wrong layout: only a shape check catches it.
    misshaped = "encoder.layers.0.linear1.weight"
    path = os.path.join(tmp, "misshaped.safetensors")
    save_safetensors(path, dict(weights, **{misshaped:
                                            weights[misshaped].T.copy()}))
    expect_refusal(checks, loom, "mis-shaped weight",
                   with_("--weights", path), misshaped)

    path = os.path.join(tmp, "truncated.safetensors")
    with open(wts, "rb") as f, open(path, "wb") as g:
        g.write(f.read()[:-5])
    expect_refusal(checks, loom, "truncated weights file",
                   with_("--weights", path), "truncated.safetensors")

    path = os.path.join(tmp, "unknown-field.pbtxt")
    write_config(path, c)
    with open(path, "a") as f:
        f.write("d_modle: 16\n")
    expect_refusal(checks, loom, "unknown config field",
                   with_("--config", path), "d_modle")

    path = os.path.join(tmp, "bad-heads.pbtxt")
    write_config(path, c, heads=3)  # does not divide d_model
    expect_refusal(checks, loom, "heads not dividing d_model",
                   with_("--config", path), "heads")

    grad_args = ["grad"] + with_("--weights", os.path.join(
        tmp, "missing.safetensors"))[1:] + [
        "--out", os.path.join(tmp, "never.safetensors")]
    expect_refusal(checks, loom, "grad with a missing weight", grad_args,
                   missing)
    checks.record("error: grad wrote no output on failure",
                  not os.path.exists(os.path.join(tmp, "never.safetensors")))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("loom", help="path of the loom binary")
    parser.add_argument("--keep", help="write the files here and keep them")
    parser.add_argument("--backend", action="append", dest="backends",
                        help="backends to run forward and grad on ('default' "
                             "passes no --backend flag, which is cpu); "
                             "default: default, interpreter")
    args = parser.parse_args()
    if not os.access(args.loom, os.X_OK):
        print(f"FAIL: '{args.loom}' is not an executable")
        return 1
    backends = args.backends or ["default", "interpreter"]
    torch.set_num_threads(1)

    checks = Checks()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or scratch
        os.makedirs(tmp, exist_ok=True)
        files = {}
        for seed, (tag, c) in enumerate(CONFIGS.items()):
            files[tag] = check_config(checks, args.loom, tmp, tag, c,
                                      backends, 1000 * (seed + 1))
        first = next(iter(CONFIGS))
        check_errors(checks, args.loom, tmp, CONFIGS[first], files[first])
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
