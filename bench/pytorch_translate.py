#!/usr/bin/python3
"""The PyTorch peer of loom-translate: a translator process on a Loom model
directory, as a PyTorch user would ship one.

    pytorch_translate.py --model DIR [--threads N] [--max-len-ratio 1.5]
        < sentences > translations

It reads DIR/config.pbtxt, DIR/model.safetensors and DIR/spm.model, builds
bench/pytorch_bench.py's Seq2Seq (PyTorch's nn.Transformer with Loom's
embeddings, positions and generator) with Loom's weights, and translates
each line of stdin greedily with a key/value cache, each sentence limited to
ratio * its length + 1 tokens as `loom-translate --beam 1` limits it, then
prints the detokenized text. bench/startup.py times it beside loom-translate.
Needs Debian's python3-torch, python3-numpy and python3-sentencepiece.
"""
import argparse
import json
import os
import struct
import sys


def parse_config(path):
    """TransformerConfig text: one `key: value` per line (what loom writes)."""
    c = {"dropout": 0.0, "layer_norm_eps": 1e-5, "norm": "POST",
         "final_norm": False, "share_embeddings": False, "tie_output": False,
         "max_len": 256}
    with open(path) as f:
        for line in f:
            line = line.split("#")[0].strip()
            if not line:
                continue
            key, value = (s.strip() for s in line.split(":", 1))
            if value in ("true", "false"):
                c[key] = value == "true"
            elif value.isalpha():
                c[key] = value
            else:
                c[key] = float(value) if any(ch in value for ch in ".e") \
                    else int(value)
    return c


def load_safetensors(path, np):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    dtypes = {"F32": np.float32, "F64": np.float64, "F16": np.float16}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=dtypes[info["dtype"]]
                                  ).reshape(info["shape"]).astype(np.float32)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--max-len-ratio", type=float, default=1.5)
    a = p.parse_args()
    if a.threads > 0:
        os.environ["OMP_NUM_THREADS"] = str(a.threads)
        os.environ["OPENBLAS_NUM_THREADS"] = str(a.threads)
    import numpy as np
    import sentencepiece
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import pytorch_bench as pb
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)

    c = parse_config(os.path.join(a.model, "config.pbtxt"))
    model = pb.Seq2Seq(c).eval()
    weights = load_safetensors(os.path.join(a.model, "model.safetensors"), np)
    state = {}
    for name, value in weights.items():
        key = "transformer." + name if name.startswith(("encoder.", "decoder.")) \
            else name
        state[key] = torch.from_numpy(value)
    missing, unexpected = model.load_state_dict(state, strict=False)
    tied = {"tgt_embed.weight", "generator.weight"}
    if unexpected or any(m not in tied and m != "pe" for m in missing):
        sys.exit("weights do not fit: missing %s, unexpected %s" %
                 (missing, unexpected))
    sp = sentencepiece.SentencePieceProcessor(
        model_file=os.path.join(a.model, "spm.model"))
    eos = 3
    limit = c["max_len"]
    with torch.inference_mode():
        for line in sys.stdin:
            text = line.rstrip("\n")
            if not text.strip():
                print(flush=True)
                continue
            ids = sp.encode(text)[:limit - 1] + [eos]
            steps = min(limit, max(2, int(a.max_len_ratio * len(ids)) + 1))
            tokens = pb.greedy_cached(model, torch.tensor([ids]), steps)[0]
            out = []
            for t in tokens.tolist():
                if t == eos:
                    break
                out.append(t)
            print(sp.decode(out), flush=True)


if __name__ == "__main__":
    main()
