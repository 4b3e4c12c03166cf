#!/usr/bin/python3
"""Converts a Loom model directory to a CTranslate2 model with the same weights.

    bench/ct2_convert.py --model DIR --out CT2_DIR [--weights FILE]

DIR is what `loom train` writes: config.pbtxt (the TransformerConfig),
model.safetensors (parameters named as PyTorch's nn.Transformer names them)
and spm.model (the SentencePiece vocabulary, whose ids are the model's).
CT2_DIR receives a float32 CTranslate2 TransformerSpec; CTranslate2
quantizes it when it loads it with another compute type.

What the two models share, so that the same weights compute the same
function:
  - the embeddings scaled by sqrt(d_model), plus Loom's sinusoidal table
    (sin on even, cos on odd features) saved as the position encodings,
    so nothing depends on CTranslate2's own table's layout;
  - pre- or post-norm as the config says, the final layer norms of a
    pre-norm model when `final_norm` is set, ReLU, and the config's epsilon;
  - self-attention's fused in_proj as CTranslate2's fused QKV; the
    cross-attention's in_proj split into the query and the fused KV;
  - the generator's weight (the target embedding when tied) and its bias;
  - the vocabulary: the SentencePiece pieces in id order, so that token
    strings map to the same ids in both (id 0 padding, 1 unk, 2 bos, 3 eos).
Nothing in a Loom model is left out; a config this cannot express (another
activation, relative positions) is refused.

Needs the ctranslate2 module (../shared/peers/build_ct2.sh), numpy and
sentencepiece.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The same readers the PyTorch translator uses (it imports torch only when
# it runs).
from pytorch_translate import load_safetensors, parse_config  # noqa: E402


def positional_encoding(length, d):
    """Loom's table: sin(pos / 10000^(2i/d)) on feature 2i, cos on 2i+1."""
    pos = np.arange(length, dtype=np.float64)[:, None]
    angle = pos / np.power(10000.0, np.arange(0, d, 2, dtype=np.float64) / d)
    pe = np.zeros((length, d), dtype=np.float64)
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe.astype(np.float32)


class Weights:
    """The parameters by name; every one read must exist, and every one
    must be read (checked by unused())."""

    def __init__(self, tensors):
        self.tensors = tensors
        self.read = set()

    def __call__(self, name):
        if name not in self.tensors:
            sys.exit("ct2_convert.py: the weights have no '%s'" % name)
        self.read.add(name)
        return self.tensors[name]

    def first(self, *names):
        for name in names:
            if name in self.tensors:
                return self(name)
        sys.exit("ct2_convert.py: the weights have none of %s" % (names,))

    def unused(self):
        return sorted(set(self.tensors) - self.read)


def set_linear(spec, w, scope):
    spec.weight = w(scope + ".weight")
    spec.bias = w(scope + ".bias")


def set_norm(spec, w, scope):
    spec.gamma = w(scope + ".weight")
    spec.beta = w(scope + ".bias")


def set_self_attention(spec, w, scope):
    spec.linear[0].weight = w(scope + ".in_proj_weight")
    spec.linear[0].bias = w(scope + ".in_proj_bias")
    set_linear(spec.linear[1], w, scope + ".out_proj")


def set_cross_attention(spec, w, scope, d):
    weight, bias = w(scope + ".in_proj_weight"), w(scope + ".in_proj_bias")
    spec.linear[0].weight, spec.linear[0].bias = weight[:d], bias[:d]
    spec.linear[1].weight, spec.linear[1].bias = weight[d:], bias[d:]
    set_linear(spec.linear[2], w, scope + ".out_proj")


def set_ffn(spec, w, scope):
    set_linear(spec.linear_0, w, scope + ".linear1")
    set_linear(spec.linear_1, w, scope + ".linear2")


def convert(model_dir, out_dir, weights_path=None):
    from ctranslate2.specs import common_spec, transformer_spec
    import sentencepiece

    c = parse_config(os.path.join(model_dir, "config.pbtxt"))
    if c.get("activation", "RELU") != "RELU":
        sys.exit("ct2_convert.py: activation %s is not converted" %
                 c["activation"])
    pre = c["norm"] == "PRE"
    d = c["d_model"]
    w = Weights(load_safetensors(
        weights_path or os.path.join(model_dir, "model.safetensors"), np))

    spec = transformer_spec.TransformerSpec.from_config(
        (c["encoder_layers"], c["decoder_layers"]), c["heads"],
        pre_norm=pre, no_final_norm=pre and not c["final_norm"],
        activation=common_spec.Activation.RELU)
    spec.config.layer_norm_epsilon = float(c["layer_norm_eps"])

    pe = positional_encoding(c["max_len"], d)
    src_embed = w("src_embed.weight")
    tgt_embed = src_embed if c["share_embeddings"] and \
        "tgt_embed.weight" not in w.tensors else w("tgt_embed.weight")
    generator = tgt_embed if c["tie_output"] and \
        "generator.weight" not in w.tensors else w("generator.weight")

    enc = spec.encoder
    enc.embeddings[0].weight = src_embed
    enc.position_encodings.encodings = pe
    if pre and c["final_norm"]:
        set_norm(enc.layer_norm, w, "encoder.norm")
    for i, layer in enumerate(enc.layer):
        scope = "encoder.layers.%d" % i
        set_self_attention(layer.self_attention, w, scope + ".self_attn")
        set_norm(layer.self_attention.layer_norm, w, scope + ".norm1")
        set_ffn(layer.ffn, w, scope)
        set_norm(layer.ffn.layer_norm, w, scope + ".norm2")

    dec = spec.decoder
    dec.embeddings.weight = tgt_embed
    dec.position_encodings.encodings = pe
    if pre and c["final_norm"]:
        set_norm(dec.layer_norm, w, "decoder.norm")
    for i, layer in enumerate(dec.layer):
        scope = "decoder.layers.%d" % i
        set_self_attention(layer.self_attention, w, scope + ".self_attn")
        set_norm(layer.self_attention.layer_norm, w, scope + ".norm1")
        set_cross_attention(layer.attention, w, scope + ".multihead_attn", d)
        set_norm(layer.attention.layer_norm, w, scope + ".norm2")
        set_ffn(layer.ffn, w, scope)
        set_norm(layer.ffn.layer_norm, w, scope + ".norm3")
    dec.projection.weight = generator
    dec.projection.bias = w("generator.bias")

    unused = w.unused()
    if unused:
        sys.exit("ct2_convert.py: weights not converted: %s" % unused)

    sp = sentencepiece.SentencePieceProcessor(
        model_file=os.path.join(model_dir, "spm.model"))
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    if pieces[1:4] != ["<unk>", "<s>", "</s>"]:
        sys.exit("ct2_convert.py: ids 1-3 of the vocabulary are %s, not "
                 "<unk> <s> </s>" % pieces[1:4])
    # The embeddings may have rows the vocabulary never produces.
    for vocab, rows in (("src_vocab", src_embed.shape[0]),
                        ("tgt_vocab", generator.shape[0])):
        if rows < len(pieces):
            sys.exit("ct2_convert.py: %s has %d rows for %d pieces" %
                     (vocab, rows, len(pieces)))
    src_tokens = pieces + ["<unused%d>" % i
                           for i in range(src_embed.shape[0] - len(pieces))]
    tgt_tokens = pieces + ["<unused%d>" % i
                           for i in range(generator.shape[0] - len(pieces))]
    spec.register_source_vocabulary(src_tokens)
    spec.register_target_vocabulary(tgt_tokens)
    spec.validate()
    spec.optimize(quantization=None)
    os.makedirs(out_dir, exist_ok=True)
    spec.save(out_dir)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True, help="Loom model directory")
    p.add_argument("--out", required=True, help="CTranslate2 model directory")
    p.add_argument("--weights", help="parameters other than DIR's own")
    a = p.parse_args()
    convert(a.model, a.out, a.weights)


if __name__ == "__main__":
    main()
