#!/usr/bin/env python3
"""Compiles a small Transformer with Loom, runs its @token_log_probs on a
batch, and compares the result with PyTorch's nn.Transformer holding the
same weights.

    python3 compile_run_compare.py [--d-model 32] [--layers 2] [--seed 1]

Loom draws the initial parameters; they are read out of the session as
numpy arrays, loaded into an nn.Transformer built with the same shape
(post-norm, ReLU, sinusoidal positions, embeddings scaled by sqrt(d_model)),
and both models score the same target sentences. Prints the largest
difference of the per-token log-probabilities.
"""

import argparse
import math
import os
import sys
import tempfile

import numpy as np

import loom


def config_text(d, heads, layers, vocab, max_len):
    return "\n".join([
        "d_model: %d" % d, "heads: %d" % heads, "d_ff: %d" % (4 * d),
        "encoder_layers: %d" % layers, "decoder_layers: %d" % layers,
        "src_vocab: %d" % vocab, "tgt_vocab: %d" % vocab, "dropout: 0.0",
        "label_smoothing: 0.0", "norm: POST", "final_norm: true",
        "share_embeddings: false", "tie_output: false",
        "max_len: %d" % max_len, ""])


def pytorch_log_probs(state, d, heads, layers, vocab, src, tgt):
    import torch
    import torch.nn as nn

    layer = dict(d_model=d, nhead=heads, dim_feedforward=4 * d, dropout=0.0,
                 activation="relu", batch_first=True)
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(**layer),
                                    layers, norm=nn.LayerNorm(d),
                                    enable_nested_tensor=False)
    decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(**layer),
                                    layers, norm=nn.LayerNorm(d))
    model = nn.ModuleDict(dict(encoder=encoder, decoder=decoder,
                               src_embed=nn.Embedding(vocab, d),
                               tgt_embed=nn.Embedding(vocab, d),
                               generator=nn.Linear(d, vocab))).double()
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in state.items():
            params[name].copy_(torch.from_numpy(value.astype(np.float64)))
    model.train()  # no fast path; dropout is 0

    def positions(n):
        pos = torch.arange(n, dtype=torch.float64)[:, None]
        i2 = torch.arange(0, d, 2, dtype=torch.float64)
        angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64),
                                i2 / d)
        pe = torch.zeros(n, d, dtype=torch.float64)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
        return pe

    def embed(table, ids):
        return table(ids) * math.sqrt(d) + positions(ids.shape[1])

    src, tgt = torch.from_numpy(src).long(), torch.from_numpy(tgt).long()
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    causal = torch.triu(torch.ones(tgt_in.shape[1], tgt_in.shape[1],
                                   dtype=torch.bool), 1)
    memory = model["encoder"](embed(model["src_embed"], src),
                              src_key_padding_mask=src == 0)
    out = model["decoder"](embed(model["tgt_embed"], tgt_in), memory,
                           tgt_mask=causal, tgt_key_padding_mask=tgt_in == 0,
                           memory_key_padding_mask=src == 0)
    logp = torch.log_softmax(model["generator"](out), -1)
    return logp.gather(-1, tgt_out[..., None])[..., 0].detach().numpy()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--d-model", type=int, default=32)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    d, vocab = args.d_model, args.vocab

    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "model.pbtxt")
        with open(config, "w") as f:
            f.write(config_text(d, args.heads, args.layers, vocab, 64))
        program = loom.compile(config=config, max_tokens=512, max_len=64,
                               max_batch=16)
    print("compiled:", program)
    session = loom.Session(program, threads=2)
    session.init_parameters(seed=args.seed)

    rng = np.random.default_rng(args.seed)
    BOS, EOS = 2, 3
    src_lens, tgt_lens = [9, 5, 12, 7], [8, 11, 4, 9]
    src = np.zeros((4, max(src_lens)), np.int32)
    tgt = np.zeros((4, max(tgt_lens)), np.int32)
    for b, (n, m) in enumerate(zip(src_lens, tgt_lens)):
        src[b, :n - 1], src[b, n - 1] = rng.integers(4, vocab, n - 1), EOS
        tgt[b, 0], tgt[b, m - 1] = BOS, EOS
        tgt[b, 1:m - 1] = rng.integers(4, vocab, m - 2)
    ours = session.run("token_log_probs", src=src, tgt=tgt)["log_probs"]

    parameters = [t["name"] for t in program.state if t["parameter"]]
    state = {name: session.state[name] for name in parameters}
    theirs = pytorch_log_probs(state, d, args.heads, args.layers, vocab, src,
                               tgt)
    worst = 0.0
    for b, m in enumerate(tgt_lens):
        worst = max(worst, float(np.abs(ours[b, :m - 1] -
                                        theirs[b, :m - 1]).max()))
    print("largest |log p(Loom) - log p(PyTorch)| over %d tokens: %.3g"
          % (sum(tgt_lens) - len(tgt_lens), worst))
    sys.exit(0 if worst < 1e-4 else 1)


if __name__ == "__main__":
    main()
