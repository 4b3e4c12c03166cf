#!/usr/bin/python3
"""Peak memory of one PyTorch training step of the Transformer, on the CPU.

The peer figure for `loom compile --report`: the same model (nn.Transformer
with the paper's base sizes, shared embeddings and tied output unless told
otherwise), one step (forward, label-smoothed cross entropy, backward, Adam)
on a batch of --batch sentences of --src-len and --tgt-len tokens.

PyTorch's CPU allocator keeps no statistics, so this measures the process:
the resident set once the model, its gradients and Adam's state exist
(allocated without running the model: zero gradients and one Adam step on
them) is the persistent baseline; the high-water mark of the resident set
after one real step, minus that baseline, is what the step itself needed
(activations, saved tensors, temporaries). No step runs before the measured
one, so no earlier peak hides it. Run it as Debian's python3 (python3-torch).
"""
import argparse
import json
import math
import resource
import time

import torch
import torch.nn as nn


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class Model(nn.Module):
    def __init__(self, d, heads, d_ff, layers, vocab, dropout):
        super().__init__()
        self.d = d
        self.embed = nn.Embedding(vocab, d)
        self.transformer = nn.Transformer(d, heads, layers, layers, d_ff,
                                          dropout, batch_first=True)
        self.generator = nn.Linear(d, vocab)
        self.generator.weight = self.embed.weight  # tied output
        pe = torch.zeros(1024, d)
        pos = torch.arange(1024).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, src, tgt_in):
        def emb(ids):
            return self.embed(ids) * math.sqrt(self.d) + self.pe[: ids.shape[1]]
        causal = self.transformer.generate_square_subsequent_mask(tgt_in.shape[1])
        h = self.transformer(emb(src), emb(tgt_in), tgt_mask=causal,
                             src_key_padding_mask=src == 0,
                             tgt_key_padding_mask=tgt_in == 0,
                             memory_key_padding_mask=src == 0)
        return self.generator(h)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--d-ff", type=int, default=2048)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--vocab", type=int, default=37000)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--src-len", type=int, default=32)
    p.add_argument("--tgt-len", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Model(a.d_model, a.heads, a.d_ff, a.layers, a.vocab, a.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98),
                           eps=1e-9)
    src = torch.randint(4, a.vocab, (a.batch, a.src_len))
    tgt = torch.randint(4, a.vocab, (a.batch, a.tgt_len + 1))

    def step():
        opt.zero_grad(set_to_none=False)
        logits = model(src, tgt[:, :-1])
        loss = nn.functional.cross_entropy(
            logits.reshape(-1, a.vocab), tgt[:, 1:].reshape(-1),
            label_smoothing=0.1, ignore_index=0)
        loss.backward()
        opt.step()
        return loss.item()

    # Gradients and Adam's moments, allocated without an activation in sight.
    for t in model.parameters():
        t.grad = torch.zeros_like(t)
    opt.step()
    baseline = rss_bytes()
    peak_before = peak_rss_bytes()
    start = time.time()
    step()
    seconds = time.time() - start
    peak = peak_rss_bytes()
    params = sum(t.numel() for t in model.parameters()) * 4
    print(json.dumps({
        "command": "pytorch_train_memory.py " + " ".join(
            f"--{k.replace('_', '-')} {v}" for k, v in vars(a).items()),
        "torch": torch.__version__,
        "tokens": a.batch * a.tgt_len,
        "parameter_bytes": params,
        "persistent_bytes_params_grads_adam": 4 * params,
        "baseline_rss_bytes": baseline,
        "peak_rss_bytes": peak,
        "peak_rss_before_step_bytes": peak_before,
        "step_peak_above_baseline_bytes": peak - baseline,
        "step_seconds": seconds,
    }, indent=2))


if __name__ == "__main__":
    main()
