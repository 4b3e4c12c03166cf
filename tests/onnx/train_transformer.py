#!/usr/bin/env python3
"""Trains an exported model in PyTorch, to hold Loom's training of it against.

    train_transformer.py prepare OUT_DIR [--steps 3]
    train_transformer.py compare OUT_DIR LOOM_GRAD LOOM_STEP1 LOOM_LOG

`prepare` builds a small translator in PyTorch (embeddings scaled by
sqrt(d_model), torch.nn.Transformer, a generator to logits over the target
vocabulary), exports its forward to OUT_DIR/model.onnx (constant folding off,
so every parameter keeps its state_dict name; batch and lengths dynamic), and
writes its starting parameters (weights.safetensors) and one batch
(batch.safetensors: src_ids, tgt_ids, tgt_mask and the targets, some of them
0, the padding that does not count). Then it trains the model in float64 on
that batch as Loom's @train_step does: cross entropy with label smoothing 0.1
ignoring target 0, Adam (betas 0.9 and 0.98, eps 1e-9) with the schedule
d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), warmup 16. It writes the
gradient at the start (expected_grad.safetensors), the parameters after the
first step (expected_step1.safetensors) and the loss of every step
(losses.json).

`compare` reads what `loom train-steps` wrote (the gradient with --grad, the
parameters after one step with --out) and printed (the losses of the steps),
and exits 1 unless
  - every gradient is within GRAD_RTOL of PyTorch's (by its norm);
  - after the first step, every element whose gradient is more than rounding
    noise moved as PyTorch moved it, to STEP_ATOL of the learning rate
    (Adam's first step moves each element by the learning rate times the
    sign of its gradient, so an element whose gradient is noise, such as the
    key bias of an attention, which softmax ignores, moves either way);
  - each step's loss is within LOSS_RTOL of PyTorch's: after the first step
    the elements that moved by noise change later gradients a little, which
    this tolerance leaves room for.
"""
import argparse
import json
import math
import os
import re
import struct
import sys

import numpy as np
import torch

D_MODEL, HEADS, FF, VOCAB_SRC, VOCAB_TGT = 32, 4, 64, 13, 11
WARMUP = 16
LOSS_RTOL = 1e-3
GRAD_RTOL = 1e-4
STEP_ATOL = 1e-3
def save_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        dtype = {np.dtype("float32"): "F32", np.dtype("int64"): "I64"}[a.dtype]
        data = a.tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = {"F32": np.float32, "I64": np.int64}[info["dtype"]]
        out[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(
            info["shape"])
    return out


class Translator(torch.nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.src_embed = torch.nn.Embedding(VOCAB_SRC, D_MODEL)
        self.tgt_embed = torch.nn.Embedding(VOCAB_TGT, D_MODEL)
        self.transformer = torch.nn.Transformer(
            d_model=D_MODEL, nhead=HEADS, num_encoder_layers=2,
            num_decoder_layers=1, dim_feedforward=FF, dropout=dropout,
            batch_first=True)
        self.generator = torch.nn.Linear(D_MODEL, VOCAB_TGT)

    def forward(self, src_ids, tgt_ids, tgt_mask):
        scale = math.sqrt(D_MODEL)
        out = self.transformer(self.src_embed(src_ids) * scale,
                               self.tgt_embed(tgt_ids) * scale,
                               tgt_mask=tgt_mask)
        return self.generator(out)


def schedule(step):
    step += 1  # LambdaLR counts from 0, Loom's step from 1
    return D_MODEL ** -0.5 * min(step ** -0.5, step * WARMUP ** -1.5)


def export(model, path, mode=torch.onnx.TrainingMode.EVAL):
    """Exports `model` traced at batch 2 and lengths 5 and 4, with batch and
    both lengths dynamic and every weight under its state_dict name."""
    src = torch.randint(1, VOCAB_SRC, (2, 5))
    tgt = torch.randint(1, VOCAB_TGT, (2, 4))
    mask = torch.nn.Transformer.generate_square_subsequent_mask(4)
    torch.onnx.export(
        model, (src, tgt, mask), path, opset_version=17,
        do_constant_folding=False, training=mode,
        input_names=["src_ids", "tgt_ids", "tgt_mask"], output_names=["logits"],
        dynamic_axes={"src_ids": {0: "batch", 1: "src_len"},
                      "tgt_ids": {0: "batch", 1: "tgt_len"},
                      "tgt_mask": {0: "tgt_len", 1: "tgt_len"},
                      "logits": {0: "batch", 1: "tgt_len"}})


def prepare(out, steps):
    torch.manual_seed(1)
    model = Translator()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    model.eval()
    os.makedirs(out, exist_ok=True)
    export(model, os.path.join(out, "model.onnx"))

    # The batch trained on: other sizes than the export traced.
    src = torch.randint(1, VOCAB_SRC, (3, 7))
    tgt = torch.randint(1, VOCAB_TGT, (3, 6))
    targets = torch.randint(1, VOCAB_TGT, (3, 6))
    targets[0, 4:] = 0
    targets[2, 5] = 0
    mask = torch.nn.Transformer.generate_square_subsequent_mask(6)
    save_safetensors(os.path.join(out, "weights.safetensors"),
                     {n: p.detach().numpy().astype(np.float32)
                      for n, p in model.named_parameters()})
    save_safetensors(os.path.join(out, "batch.safetensors"),
                     {"src_ids": src.numpy(), "tgt_ids": tgt.numpy(),
                      "tgt_mask": mask.numpy().astype(np.float32),
                      "targets": targets.numpy()})

    model = model.double()
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0,
                                 betas=(0.9, 0.98), eps=1e-9)
    lr = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        logits = model(src, tgt, mask.double())
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, VOCAB_TGT), targets.reshape(-1),
            label_smoothing=0.1, ignore_index=0)
        loss.backward()
        if step == 0:
            save_safetensors(os.path.join(out, "expected_grad.safetensors"),
                             {n: p.grad.numpy().astype(np.float32)
                              for n, p in model.named_parameters()})
        optimizer.step()
        if step == 0:
            save_safetensors(os.path.join(out, "expected_step1.safetensors"),
                             {n: p.detach().numpy().astype(np.float32)
                              for n, p in model.named_parameters()})
        lr.step()
        losses.append(loss.item())
    with open(os.path.join(out, "losses.json"), "w") as f:
        json.dump(losses, f)


def relative(got, want):
    return np.linalg.norm(got.astype(np.float64) - want) / max(
        np.linalg.norm(want), 1e-12)


def compare(out, loom_grad, loom_step1, loom_log):
    start = load_safetensors(os.path.join(out, "weights.safetensors"))
    want_grad = load_safetensors(os.path.join(out, "expected_grad.safetensors"))
    want_step1 = load_safetensors(os.path.join(out, "expected_step1.safetensors"))
    got_grad = load_safetensors(loom_grad)
    got_step1 = load_safetensors(loom_step1)
    with open(os.path.join(out, "losses.json")) as f:
        want_losses = json.load(f)
    with open(loom_log) as f:
        got_losses = [float(m.group(1)) for m in
                      re.finditer(r"^step \d+ loss (\S+)$", f.read(), re.M)]
    ok = True
    if set(got_grad) != set(want_grad) or set(got_step1) != set(want_grad):
        print("FAIL: the parameters differ: "
              f"{sorted((set(got_grad) | set(got_step1)) ^ set(want_grad))}")
        return 1
    lr = schedule(0)
    worst_grad = worst_step = 0.0
    moved = 0
    for name in sorted(want_grad):
        g = want_grad[name].astype(np.float64)
        err = relative(got_grad[name], g)
        worst_grad = max(worst_grad, err)
        if err > GRAD_RTOL:
            ok = False
            print(f"FAIL: {name}: gradient off by {err:.2e} of its norm")
        real = np.abs(g) > 1e-6 * np.abs(g).max()
        moved += int(real.sum())
        off = np.abs(got_step1[name].astype(np.float64) -
                     want_step1[name])[real]
        err = (off.max() if off.size else 0.0) / lr
        worst_step = max(worst_step, err)
        if err > STEP_ATOL:
            ok = False
            print(f"FAIL: {name}: first step off by {err:.2e} of the rate")
    print(f"{'ok' if worst_grad <= GRAD_RTOL else 'FAIL'}: {len(want_grad)} "
          f"gradients, the furthest {worst_grad:.2e} of its norm off")
    print(f"{'ok' if worst_step <= STEP_ATOL else 'FAIL'}: the first step "
          f"moved {moved} elements as PyTorch did, the furthest "
          f"{worst_step:.2e} of the learning rate off")
    if len(got_losses) != len(want_losses):
        print(f"FAIL: {len(got_losses)} losses, expected {len(want_losses)}")
        return 1
    for i, (g, w) in enumerate(zip(got_losses, want_losses)):
        good = abs(g - w) <= LOSS_RTOL * abs(w)
        ok &= good
        print(f"{'ok' if good else 'FAIL'}: step {i + 1} loss {g:.7f} "
              f"(PyTorch {w:.7f}, {abs(g - w) / abs(w):.1e} off)")
    print("PASSED" if ok else "FAILED")
    return 0 if ok else 1


def bad_batches(out):
    """Batches `loom train-steps` must refuse: one with a tensor the model
    does not take, one whose ids are not whole numbers."""
    batch = load_safetensors(os.path.join(out, "batch.safetensors"))
    extra = dict(batch, extra=batch["src_ids"])
    save_safetensors(os.path.join(out, "extra.safetensors"), extra)
    fraction = dict(batch, src_ids=batch["src_ids"].astype(np.float32) + 0.5)
    save_safetensors(os.path.join(out, "fraction.safetensors"), fraction)


def export_training(out):
    """The translator with dropout 0.1, exported in training mode: its
    Dropout nodes say training_mode true, as for a model meant to go on
    training elsewhere."""
    torch.manual_seed(1)
    model = Translator(dropout=0.1)
    model.train()
    os.makedirs(out, exist_ok=True)
    export(model, os.path.join(out, "training.onnx"),
           torch.onnx.TrainingMode.TRAINING)


def step_losses(log):
    with open(log) as f:
        return [float(line.split()[-1]) for line in f
                if line.startswith("step ")]


def check_dropout(same_seed, same_seed_again, other_seed, no_dropout):
    """Dropout in training mode draws from the step's seed: one seed gives
    one run, another seed another, and either differs from the run without
    dropout; each still learns (its loss falls)."""
    a, again, b, none = (step_losses(p) for p in
                         (same_seed, same_seed_again, other_seed, no_dropout))
    ok = True

    def say(good, what):
        nonlocal ok
        ok &= good
        print(("ok: " if good else "FAIL: ") + what)

    say(len(a) == len(b) == len(none) == 3, "three steps each")
    say(a == again, f"the same seed gives the same losses {a}")
    say(a[0] != b[0], f"another seed another loss ({a[0]} vs {b[0]})")
    say(all(abs(x - y) > 1e-4 for x, y in zip(a, none)),
        f"dropout changes every step's loss ({a} vs {none})")
    say(all(x == x and x > 0 for x in a + b), "losses finite")
    say(a[2] < a[0] and b[2] < b[0], "each run's loss falls")
    print("PASSED" if ok else "FAILED")
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=3)
    c = sub.add_parser("compare")
    c.add_argument("out")
    c.add_argument("grad")
    c.add_argument("step1")
    c.add_argument("log")
    b = sub.add_parser("bad-batches")
    b.add_argument("out")
    t = sub.add_parser("export-training")
    t.add_argument("out")
    d = sub.add_parser("check-dropout")
    d.add_argument("logs", nargs=4)
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(args.out, args.steps)
        return 0
    if args.command == "bad-batches":
        bad_batches(args.out)
        return 0
    if args.command == "export-training":
        export_training(args.out)
        return 0
    if args.command == "check-dropout":
        return check_dropout(*args.logs)
    return compare(args.out, args.grad, args.step1, args.log)


if __name__ == "__main__":
    sys.exit(main())
