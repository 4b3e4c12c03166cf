#!/usr/bin/env python3
"""Exports torch.nn.Transformer to ONNX as an ONNX backend test.

    export_transformer.py OUT_DIR [--opset 17]

OUT_DIR gets model.onnx (batch, source and target lengths dynamic) and
test_data_set_0/ with inputs src, tgt, tgt_mask and the output PyTorch
computes for them, at other sizes than the export traced (batch 3, lengths 7
and 6 against 2, 5 and 4), so that `loom onnx-test OUT_DIR` checks the
imported graph at sizes it only knows symbolically. Constant folding is off
in the export, as for a model one means to train: folded, the exporter would
store each projection's transposed weight under a name of its own
("onnx::MatMul_763") instead of the state_dict's. The weights are perturbed
from their initial values so that no two initializers are equal (the
exporter would otherwise share equal ones, such as every LayerNorm's ones,
under one name).
"""
import argparse
import os

import torch
from onnx import numpy_helper


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--opset", type=int, default=17)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = torch.nn.Transformer(d_model=32, nhead=2, num_encoder_layers=2,
                                 num_decoder_layers=2, dim_feedforward=64,
                                 dropout=0.1, batch_first=True)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    model.eval()

    os.makedirs(os.path.join(args.out, "test_data_set_0"), exist_ok=True)
    src, tgt = torch.randn(2, 5, 32), torch.randn(2, 4, 32)
    mask = model.generate_square_subsequent_mask(4)
    torch.onnx.export(
        model, (src, tgt, None, mask), os.path.join(args.out, "model.onnx"),
        opset_version=args.opset, do_constant_folding=False,
        input_names=["src", "tgt", "tgt_mask"],
        output_names=["out"],
        dynamic_axes={"src": {0: "batch", 1: "src_len"},
                      "tgt": {0: "batch", 1: "tgt_len"},
                      "tgt_mask": {0: "tgt_len", 1: "tgt_len"}})

    src, tgt = torch.randn(3, 7, 32), torch.randn(3, 6, 32)
    mask = model.generate_square_subsequent_mask(6)
    with torch.no_grad():
        out = model(src, tgt, tgt_mask=mask)
    data = os.path.join(args.out, "test_data_set_0")
    for i, t in enumerate([src, tgt, mask]):
        with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(t.numpy()).SerializeToString())
    with open(os.path.join(data, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(out.numpy()).SerializeToString())


if __name__ == "__main__":
    main()
