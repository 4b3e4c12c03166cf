#!/usr/bin/env python3
"""Exports a PyTorch translator written the way PyTorch users write one.

    export_translator.py OUT_DIR [--variant generate|tril|where] [--norm-first]

The model takes source and target ids only: it builds its masks at run time
from them, as tutorials and nn.Transformer's own documentation do, and the
export carries that construction instead of a mask input:

  generate  nn.Transformer.generate_square_subsequent_mask(tgt.size(1)):
            a square ConstantOfShape(-inf) of the target length, then Trilu
            (upper, diagonal 1);
  tril      torch.tril(torch.ones(n, n)) == 0 filled with -inf by
            masked_fill: Trilu (lower), Equal and Where;
  where     its own attention (no nn.MultiheadAttention): scores filled with
            -1e9 by masked_fill where a lower-triangular bool mask is False
            (Where on the scores), with the heads cut by torch.split (Split).

Padding masks come from `ids == 0` (bool, as key_padding_mask). Batch and
both lengths are dynamic. OUT_DIR gets model.onnx and test_data_set_0/ with
inputs at other sizes than the export traced (batch 3, lengths 9 and 7
against 2, 5 and 4, with padding at the ends of shorter rows) and PyTorch's
log-probabilities for them, computed in float64.
"""
import argparse
import math
import os

import torch
from torch import nn
from onnx import numpy_helper

VOCAB, D, HEADS, FF = 40, 32, 4, 64


def positions(max_len, d):
    pos = torch.arange(max_len).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
    pe = torch.zeros(max_len, d)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


class SelfAttention(nn.Module):
    """Hand-written multi-head attention, heads cut with torch.split."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D, 3 * D)
        self.out = nn.Linear(D, D)

    def forward(self, x, allowed):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).split(D, dim=-1)

        def heads(t):
            return t.reshape(b, n, HEADS, D // HEADS).transpose(1, 2)

        q, k, v = heads(q), heads(k), heads(v)
        scores = q @ k.transpose(-2, -1) / math.sqrt(D // HEADS)
        scores = scores.masked_fill(~allowed, -1e9)
        ctx = torch.softmax(scores, -1) @ v
        return self.out(ctx.transpose(1, 2).reshape(b, n, D))


class Translator(nn.Module):
    def __init__(self, variant, norm_first):
        super().__init__()
        self.variant = variant
        self.src_embed = nn.Embedding(VOCAB, D)
        self.tgt_embed = nn.Embedding(VOCAB, D)
        self.register_buffer("pe", positions(64, D))
        self.transformer = nn.Transformer(
            d_model=D, nhead=HEADS, num_encoder_layers=2, num_decoder_layers=1,
            dim_feedforward=FF, dropout=0.1, batch_first=True,
            norm_first=norm_first)
        self.self_attention = SelfAttention()
        self.generator = nn.Linear(D, VOCAB)

    def embed(self, table, ids):
        return table(ids) * math.sqrt(D) + self.pe[:ids.size(1)]

    def causal_mask(self, n):
        if self.variant == "generate":
            return nn.Transformer.generate_square_subsequent_mask(n)
        lower = torch.tril(torch.ones(n, n))
        return lower.masked_fill(lower == 0, float("-inf")).masked_fill(
            lower == 1, 0.0)

    def forward(self, src, tgt):
        src_pad, tgt_pad = src == 0, tgt == 0
        x, y = self.embed(self.src_embed, src), self.embed(self.tgt_embed, tgt)
        n = tgt.size(1)
        if self.variant == "where":
            allowed = torch.tril(torch.ones(n, n)).bool()
            y = y + self.self_attention(y, allowed)
            out = self.transformer(x, y, src_key_padding_mask=src_pad,
                                   memory_key_padding_mask=src_pad)
        else:
            out = self.transformer(
                x, y, tgt_mask=self.causal_mask(n),
                src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad,
                memory_key_padding_mask=src_pad)
        return torch.log_softmax(self.generator(out), -1)


def ids(batch, length, generator):
    """Ids in 1..VOCAB-1, each row after the first ending in padding."""
    t = torch.randint(1, VOCAB, (batch, length), generator=generator)
    for row in range(1, batch):
        t[row, length - row:] = 0
    return t


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--variant", default="generate",
                        choices=["generate", "tril", "where"])
    parser.add_argument("--norm-first", action="store_true")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = Translator(args.variant, args.norm_first)
    # Equal initial weights (every LayerNorm's ones) would be stored once.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    model.eval()
    g = torch.Generator().manual_seed(1)
    os.makedirs(os.path.join(args.out, "test_data_set_0"), exist_ok=True)
    torch.onnx.export(
        model, (ids(2, 5, g), ids(2, 4, g)),
        os.path.join(args.out, "model.onnx"), opset_version=17,
        do_constant_folding=False, input_names=["src", "tgt"],
        output_names=["log_probs"],
        dynamic_axes={"src": {0: "batch", 1: "src_len"},
                      "tgt": {0: "batch", 1: "tgt_len"}})

    src, tgt = ids(3, 9, g), ids(3, 7, g)
    with torch.no_grad():
        want = model.double()(src, tgt)
    data = os.path.join(args.out, "test_data_set_0")
    for i, t in enumerate([src, tgt]):
        with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(t.numpy()).SerializeToString())
    with open(os.path.join(data, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(
            want.float().numpy()).SerializeToString())


if __name__ == "__main__":
    main()
