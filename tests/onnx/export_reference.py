#!/usr/bin/env python3
"""Exports the PyTorch twin of Loom's own Transformer to ONNX.

    export_reference.py OUT_DIR

tests/reference/test_transformer.py holds `Reference`, the model Loom builds
from a config, written with torch.nn.Transformer's stacks and named as its
state_dict. This exports its forward (source and target ids to the log-probabilities of
every target position) at
the structure of the `base` preset (post-norm, 6 + 6 layers, embeddings
shared and tied to the generator, no final norms), narrowed to d_model 64
so that the file stays small: the count of attention blocks and projections
does not depend on the width. OUT_DIR gets model.onnx, a test data set with
PyTorch's output (in float64) for `loom onnx-test`, and base-structure.txtpb,
the same model as a Loom config, so that both can be compiled and their
reports compared. The causal mask is an input (tgt_mask), and there is no
padding mask: the counts do not depend on masks. The positional encodings
are Reference's buffer, cut to each sequence's length (a Slice to a run-time
end).
"""
import os
import sys

import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "reference"))
import test_transformer as reference  # noqa: E402

CONFIG = dict(d_model=64, heads=8, d_ff=128, encoder_layers=6,
              decoder_layers=6, src_vocab=100, tgt_vocab=100, dropout=0.0,
              label_smoothing=0.1, norm="POST", final_norm=False,
              share_embeddings=True, tie_output=True, max_len=64)


class Forward(torch.nn.Module):
    """Reference's forward with the causal mask given and no padding."""

    def __init__(self):
        super().__init__()
        self.model = reference.Reference(CONFIG).float()
        self.model.pe = self.model.pe.float()

    def forward(self, src, tgt, tgt_mask):
        m = self.model
        memory = m.encoder(m.embed(m.src_embed, src))
        out = m.decoder(m.embed(m.tgt_embed, tgt), memory, tgt_mask=tgt_mask)
        return torch.log_softmax(m.generator(out), -1)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = Forward().eval()
    # nn.TransformerEncoder and Decoder copy one layer N times, and the
    # exporter would store equal weights once: drawn apart, every layer keeps
    # its own (and no two layers' products are the same computation).
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    src = torch.randint(1, 100, (2, 5))
    tgt = torch.randint(1, 100, (2, 4))
    mask = torch.nn.Transformer.generate_square_subsequent_mask(4)
    torch.onnx.export(
        model, (src, tgt, mask), os.path.join(out, "model.onnx"),
        opset_version=17, do_constant_folding=False,
        input_names=["src", "tgt", "tgt_mask"], output_names=["log_probs"],
        dynamic_axes={"src": {0: "batch", 1: "src_len"},
                      "tgt": {0: "batch", 1: "tgt_len"},
                      "tgt_mask": {0: "tgt_len", 1: "tgt_len"}})
    # A test data set at other sizes than the export traced, with PyTorch's
    # log-probabilities (in float64) to compare with.
    data = os.path.join(out, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    src = torch.randint(1, 100, (3, 9))
    tgt = torch.randint(1, 100, (3, 7))
    mask = torch.nn.Transformer.generate_square_subsequent_mask(7)
    with torch.no_grad():
        want = model.double()(src, tgt, mask.double())
    for i, t in enumerate([src, tgt, mask]):
        with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(t.numpy()).SerializeToString())
    with open(os.path.join(data, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(
            want.float().numpy()).SerializeToString())
    with open(os.path.join(out, "base-structure.txtpb"), "w") as f:
        for key in ("d_model", "heads", "d_ff", "encoder_layers",
                    "decoder_layers", "src_vocab", "tgt_vocab", "max_len"):
            f.write(f"{key}: {CONFIG[key]}\n")
        f.write("norm: POST\nshare_embeddings: true\ntie_output: true\n")


if __name__ == "__main__":
    main()
