#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/.

Seeds are small valid inputs and near misses of each, so that the fuzzer
starts from the formats' structure. Generated seeds are named seed-*; any
other file in a corpus folder (an input a fuzzer once broke the code with)
is left alone.

    fuzz/make-corpus.py                   config, safetensors, mlir, text, onnx,
                                          plot
    fuzz/make-corpus.py --loom build/bin/loom
                                          the executable seeds as well

The executable seeds are compiled by `loom compile` from a config smaller
than the tiny preset, for the portable x86-64-v2 level, so that they run on
any x86-64 machine the fuzzer runs on.
"""

import argparse
import json
import os
import pathlib
import re
import struct
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"


def reset(target):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("seed-*"):
        old.unlink()
    return folder


def write(folder, name, data):
    if isinstance(data, str):
        data = data.encode()
    (folder / ("seed-" + name)).write_bytes(data)


# --- config ----------------------------------------------------------------

TINY = """d_model: 32
heads: 2
d_ff: 64
encoder_layers: 2
decoder_layers: 2
src_vocab: 32
tgt_vocab: 32
"""

SMALL = """# The small preset, spelled out.
d_model: 256
heads: 4
d_ff: 1024
encoder_layers: 3
decoder_layers: 3
src_vocab: 8000
tgt_vocab: 8000
dropout: 0.1
label_smoothing: 0.1
norm: PRE
final_norm: true
share_embeddings: true
tie_output: true
max_len: 128
layer_norm_eps: 1e-6
"""


def configs():
    folder = reset("config")
    write(folder, "tiny.pbtxt", TINY)
    write(folder, "small.pbtxt", SMALL)
    write(folder, "empty.pbtxt", "")
    write(folder, "odd-d-model.pbtxt", TINY.replace("d_model: 32", "d_model: 33"))
    write(folder, "heads-zero.pbtxt", TINY.replace("heads: 2", "heads: 0"))
    write(folder, "unknown-field.pbtxt", TINY + "d_modle: 4\n")
    write(folder, "syntax.pbtxt", TINY.replace("heads: 2", "heads 2 {"))
    write(folder, "negative.pbtxt", TINY + "max_len: -1\ndropout: -0.5\n")
    write(folder, "shared-mismatch.pbtxt",
          TINY.replace("tgt_vocab: 32", "tgt_vocab: 31") + "share_embeddings: true\n")
    write(folder, "braces.pbtxt", "d_model: 8 heads: 2; d_ff: 0x10 norm: 1\n"
          "encoder_layers: 1 decoder_layers: 1 src_vocab: 4 tgt_vocab: 4\n")


# --- safetensors -----------------------------------------------------------

def safetensors(tensors, metadata=None, pad=True, header_extra=None):
    """tensors: name -> (dtype, shape, bytes). Offsets in name order."""
    header, data, offset = {}, b"", 0
    for name, (dtype, shape, raw) in sorted(tensors.items()):
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(raw)]}
        data += raw
        offset += len(raw)
    if metadata is not None:
        header["__metadata__"] = metadata
    if header_extra:
        header.update(header_extra)
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def tensor_seeds():
    folder = reset("safetensors")
    f32 = struct.pack("<6f", 0.0, -0.0, 1.5, float("inf"), 1e-40, 3.0e38)
    f16 = struct.pack("<4H", 0x0000, 0x3C00, 0x0001, 0x7BFF)
    bf16 = struct.pack("<4H", 0x8000, 0x3F80, 0x0001, 0x7F7F)
    f64 = struct.pack("<2d", 0.1, -2.5e300)
    i32 = struct.pack("<3i", 0, -1, 2147483647)
    i64 = struct.pack("<2q", -9223372036854775808, 42)
    write(folder, "all-dtypes.safetensors", safetensors({
        "a.f32": ("F32", [2, 3], f32),
        "b.f16": ("F16", [4], f16),
        "c.bf16": ("BF16", [2, 2], bf16),
        "d.f64": ("F64", [2], f64),
        "e.i32": ("I32", [3], i32),
        "f.i64": ("I64", [1, 2], i64),
        "g.bool": ("BOOL", [2], b"\x00\x01"),
        "h.u8": ("U8", [3], b"abc"),
    }, metadata={"format": "pt", "step": "12"}))
    write(folder, "scalar-and-empty.safetensors", safetensors({
        "scalar": ("F32", [], struct.pack("<f", 2.0)),
        "empty": ("F32", [0, 4], b""),
    }))
    write(folder, "no-tensors.safetensors", safetensors({}, metadata={}))
    write(folder, "unpadded.safetensors",
          safetensors({"w": ("F16", [1], f16[:2])}, pad=False))
    write(folder, "overlap.safetensors", struct.pack("<Q", 96) + json.dumps({
        "a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
        "b": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]},
    }).encode().ljust(96) + b"xyz")
    write(folder, "hole.safetensors", struct.pack("<Q", 64) + json.dumps({
        "a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]},
    }).encode().ljust(64) + b"xy")
    write(folder, "wrong-size.safetensors", safetensors(
        {"a": ("F32", [3], f32[:8])}))
    write(folder, "bad-json.safetensors", struct.pack("<Q", 12) + b'{"a": {"dty')
    write(folder, "long-header.safetensors", struct.pack("<Q", 1 << 40) + b"{}")
    write(folder, "huge-shape.safetensors", struct.pack("<Q", 112) + json.dumps({
        "a": {"dtype": "F32", "shape": [4294967296, 4294967296, 0],
              "data_offsets": [0, 0]},
    }).encode().ljust(112))
    write(folder, "short.safetensors", b"\x02\x00\x00")


# --- mlir ------------------------------------------------------------------

def functions(text):
    """The top-level functions of `text`, comments dropped."""
    lines = [l for l in text.splitlines() if not l.lstrip().startswith("//")]
    found, current = [], None
    for line in lines:
        if line.startswith("func.func") or line.startswith("module"):
            current = [line]
        elif current is not None:
            current.append(line)
            if line == "}":
                found.append("\n".join(current) + "\n")
                current = None
    return found


def mlir_seeds():
    folder = reset("mlir")
    sources = sorted((ROOT / "tests" / "ir").glob("*.mlir")) + \
        sorted((ROOT / "tests" / "ir" / "ops").glob("*.mlir"))
    for source in sources:
        chunks = re.split(r"^// -----$", source.read_text(), flags=re.M)
        n = 0
        for chunk in chunks:
            for function in functions(chunk):
                if len(function) > 4096:
                    continue
                write(folder, "%s-%02d.mlir" % (source.stem, n), function)
                n += 1


# --- text ------------------------------------------------------------------

def text_seeds():
    folder = reset("text")
    write(folder, "pairs.txt",
          "the dog runs\na small house\n\0der Hund rennt\nein kleines Haus\n")
    write(folder, "crlf-bom.txt",
          "\ufeffthe river\r\nblue sky\r\n\0\ufeffder Fluss\r\nblauer Himmel\r\n")
    write(folder, "empty-and-long.txt",
          "  \nthe old road runs past two green trees near water\nsnow\n"
          "\0x\n\t\nSchnee\n")
    write(folder, "mismatch.txt", "one\ntwo\nthree\n\0eins\nzwei\n")
    write(folder, "invalid-utf8.txt", b"ok\n\xc3\x28 bad\n\0gut\nschlecht\n")
    write(folder, "utf8-edges.txt",
          b"\xc2\x80 \xdf\xbf \xe0\xa0\x80 \xed\x9f\xbf \xee\x80\x80 "
          b"\xf0\x90\x80\x80 \xf4\x8f\xbf\xbf\n\0\xe0\x80\x80 \xed\xa0\x80 "
          b"\xf4\x90\x80\x80 \xc0\xaf\n")
    write(folder, "no-nul.txt", "people walk along the road\n")
    write(folder, "unicode.txt",
          "caf\u00e9 \u00fcber \u6f22\u5b57 \U0001F600\n\0\uff21\uff22 "
          "\u2163 \u00bd\n")


# --- plot --------------------------------------------------------------------

def train_record(step, loss, elapsed, lr="0.0005", tps="12000"):
    """A train record as `loom train` writes it (api/train/Observers.cpp)."""
    return ('{"type": "train", "step": %d, "epoch": 1, "loss": %s, "lr": %s, '
            '"tokens_per_s": %s, "tokens": %d, "elapsed_s": %s, "ranks": 1, '
            '"wait_share": 0}\n' % (step, loss, lr, tps, step * 5000, elapsed))


def valid_record(step, nll, bleu, elapsed):
    return ('{"type": "valid", "step": %d, "epoch": 1, "valid_nll": %s, '
            '"valid_ppl": 10, "valid_bleu": %s, "valid_s": 1.5, '
            '"elapsed_s": %s}\n' % (step, nll, bleu, elapsed))


def plot_seeds():
    """metrics.jsonl files for tools/loom/loom-plot.py's reader
    (fuzz/plot_fuzz.py): a run, one with NaN written as null, records of
    one kind, CRLF ends with a blank line and a record of a later version,
    and a last record cut while it was written."""
    folder = reset("plot")
    run = (train_record(50, "8", "20") + train_record(100, "5.65685", "40") +
           valid_record(100, "4.24264", "3", "41.5") +
           train_record(150, "4.6188", "60.2", lr="0.00075") +
           valid_record(200, "3", "6.25", "82"))
    write(folder, "run.jsonl", run)
    write(folder, "nulls.jsonl",
          train_record(1, "null", "0.5", lr="0.001", tps="null") +
          valid_record(1, "null", "null", "1.25") + train_record(2, "9.5", "1"))
    write(folder, "valid-only.jsonl", valid_record(10, "2.5", "31.4", "3600"))
    write(folder, "train-only.jsonl", train_record(1, "10.25", "0.1", lr="1e-07"))
    write(folder, "crlf-later-version.jsonl",
          (train_record(4, "7", "2") + "\n" +
           '{"type": "checkpoint", "step": 4, "path": "checkpoints/step-4.safetensors"}\n' +
           valid_record(4, "6.5", "0", "3")).replace("\n", "\r\n"))
    write(folder, "torn.jsonl", run + train_record(250, "2.5", "100")[:40])


# --- executable --------------------------------------------------------------

FUZZ_CONFIG = """# Smaller than the tiny preset, so that every entry point runs in
# microseconds under the sanitizers.
d_model: 8
heads: 2
d_ff: 16
encoder_layers: 1
decoder_layers: 1
src_vocab: 8
tgt_vocab: 8
max_len: 8
"""


def header(payload, length=None, checksum=None):
    """The executable file header (runtime/Executable.h) for `payload`."""
    fnv = 0xcbf29ce484222325
    for byte in payload:
        fnv = ((fnv ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return (b"LOOMEXE\n" + struct.pack("<Q", len(payload) if length is None else length)
            + struct.pack("<Q", fnv if checksum is None else checksum))


def proto(args, data):
    """Runs protoc on executable.proto: --decode (binary to text) or --encode."""
    return subprocess.run(["protoc", args, "-I", str(ROOT / "runtime"),
                           "executable.proto"], input=data,
                          capture_output=True, check=True).stdout


def fields(text):
    """The top-level fields of protoc's text output, as (name, lines)."""
    found, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        name = lines[i].split()[0].rstrip(":")
        if lines[i].endswith("{"):
            end = lines.index("}", i)
            found.append((name, lines[i:end + 1]))
            i = end + 1
        else:
            found.append((name, [lines[i]]))
            i += 1
    return found


def value(block, key, default=None):
    for line in block:
        if line.strip().startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    return default


def one_entry(payload, entry, library_only):
    """`payload` cut down to the entry point `entry` and what it uses. With
    `library_only`, the generated kernels' steps go too, and the code with
    them: an executable the runtime runs without loading any code."""
    top = fields(proto("--decode=loom.runtime.Executable", payload).decode())
    buffers = [b for n, b in top if n == "buffers"]
    kernels = [k for n, k in top if n == "kernels"]
    entries = [e for n, e in top if n == "entry_points"]
    block = next(e for e in entries if value(e, "name") == '"%s"' % entry)

    # The entry's lines: header fields, then steps { ... } blocks.
    head, steps, i = [], [], 1
    while i < len(block) - 1:
        if block[i] == "  steps {":
            end = block.index("  }", i)
            steps.append(block[i + 1:end])
            i = end + 1
        else:
            head.append(block[i])
            i += 1

    def kernel_of(step):
        return int(value(step, "kernel", "0"))

    if library_only:
        steps = [st for st in steps
                 if value(kernels[kernel_of(st)], "kind") != "GENERATED"]
    used = set()
    for line in head:
        if line.strip().split(":")[0] in ("inputs", "outputs"):
            used.add(int(line.split(":")[1]))
    for st in steps:
        used.update(int(l.split(":")[1]) for l in st if l.strip().startswith("args:"))
    used.update(int(value(buffers[b], "view_of")) for b in list(used)
                if value(buffers[b], "view_of") is not None)
    buffer_map = {old: new for new, old in enumerate(sorted(used))}
    kernel_map = {old: new for new, old in
                  enumerate(sorted({kernel_of(st) for st in steps}))}

    out = []
    for name, lines in top:
        if name == "buffers":
            index = buffers.index(lines)
            if index not in buffer_map:
                continue
            lines = [("  view_of: %d" % buffer_map[int(l.split(":")[1])])
                     if l.startswith("  view_of:") else l for l in lines]
        elif name == "kernels":
            if kernels.index(lines) not in kernel_map:
                continue
        elif name == "entry_points":
            if lines is not block:
                continue
            lines = ["entry_points {"]
            for line in head:
                key = line.strip().split(":")[0]
                if key in ("inputs", "outputs"):
                    line = "  %s: %d" % (key, buffer_map[int(line.split(":")[1])])
                lines.append(line)
            for st in steps:
                lines += ["  steps {", "    kernel: %d" % kernel_map[kernel_of(st)]]
                for l in st:
                    if l.strip().startswith("args:"):
                        l = "    args: %d" % buffer_map[int(l.split(":")[1])]
                    if not l.strip().startswith("kernel:"):
                        lines.append(l)
                lines.append("  }")
            lines.append("}")
        elif name in ("code", "code_checksum") and library_only:
            lines = ["code_checksum: %d" % 0xcbf29ce484222325] if name == "code_checksum" else []
        out += lines
    return proto("--encode=loom.runtime.Executable", ("\n".join(out) + "\n").encode())


def executable_seeds(loom):
    folder = CORPUS / "executable"
    folder.mkdir(parents=True, exist_ok=True)
    for old in list(folder.glob("seed-*")):
        old.unlink()
    variants = [("v2", []),
                ("v2-shared", ["share_embeddings: true\n", "tie_output: true\n",
                               "norm: PRE\n", "final_norm: true\n",
                               "dropout: 0.1\n"])]
    payloads = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, extra in variants:
            config = pathlib.Path(tmp) / (name + ".pbtxt")
            config.write_text(FUZZ_CONFIG + "".join(extra))
            out = pathlib.Path(tmp) / (name + ".loomx")
            subprocess.run([loom, "compile", "--config", str(config),
                            "--target", "cpu", "--cpu", "x86-64-v2",
                            "--max-tokens", "8", "--max-len", "4",
                            "--max-batch", "2", "-o", str(out)], check=True)
            # The payload alone: the fuzzer gives it a correct header.
            payload = out.read_bytes()[24:]
            write(folder, name + ".payload", payload)
            payloads.append(payload)
    # Each entry point alone, without generated kernels (and so without
    # code): inputs of a few KB that the fuzzer runs many times faster than
    # the whole model.
    for entry in ["loss", "loss_grad", "train_step", "token_log_probs",
                  "encode", "decode_step"]:
        write(folder, "v2-%s-library.payload" % entry,
              one_entry(payloads[0], entry, True))
    # Whole files (they start with the magic), small: the header's checks.
    write(folder, "raw-empty.loomx", header(b""))
    write(folder, "raw-truncated.loomx", header(payloads[0])[:24] + payloads[0][:64])
    write(folder, "raw-bad-checksum.loomx",
          header(payloads[0][:64], checksum=1) + payloads[0][:64])
    write(folder, "raw-short.loomx", b"LOOMEXE\n\x10")


# --- dictionaries -------------------------------------------------------------

def dictionary(name, words):
    folder = ROOT / "fuzz" / "dict"
    folder.mkdir(exist_ok=True)
    lines = ["# Tokens of the %s target's format, written by make-corpus.py." % name]
    for word in words:
        escaped = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else
                          "\\x%02x" % ord(c) for c in word)
        lines.append('"%s"' % escaped)
    (folder / (name + ".dict")).write_text("\n".join(lines) + "\n")


def dictionaries():
    fields = ["d_model", "heads", "d_ff", "encoder_layers", "decoder_layers",
              "src_vocab", "tgt_vocab", "dropout", "label_smoothing",
              "layer_norm_eps", "norm", "final_norm", "share_embeddings",
              "tie_output", "max_len", "PRE", "POST", "true", "false", "inf",
              "nan", "-", ":", "{", "}", "<", ">", "#", "0x", "1e308",
              "9223372036854775807", "-9223372036854775808"]
    dictionary("config", fields)
    dictionary("safetensors", [
        "dtype", "shape", "data_offsets", "__metadata__", "F32", "F16",
        "BF16", "F64", "I32", "I64", "BOOL", "U8", "I8", "U16", "I16", "U32",
        "U64", "F8_E4M3", "F8_E5M2", "[", "]", "{", "}", ":", ",", "\"",
        "18446744073709551615", "9223372036854775807", "4294967296",
        "2147483648", "-1", "1e3", "null"])
    ops = sorted(set(re.findall(r'Op<"([a-z_]+)"',
                                (ROOT / "ir" / "LoomOps.td").read_text())))
    dictionary("mlir", ["loom." + op for op in ops] + [
        "func.func", "return", "tensor<", "?x", "xf32>", "xf16>", "xbf16>",
        "xf64>", "xi32>", "xi64>", "xi1>", "f32>", "i64>", "->", "%arg0",
        ": (", ") ->", "{axis = ", " : i64}", "keep_dims", "transpose_rhs",
        "transpose_lhs", "dense<", "loc(", "#loom", "!loom"])
    dictionary("text", ["\0", "\n", "\r\n", "\xef\xbb\xbf", "\xc2\x80",
                        "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe0\x80",
                        "\xf0\x90\x80\x80", "\xe2\x96\x81", " ", "\t"])


# --- onnx ------------------------------------------------------------------

def onnx_seeds():
    """Small ONNX models of what the importer takes: elementwise ops,
    shape arithmetic on a dynamic dim, attention's products, a Gemm with
    initializers, a deep chain, a run-time causal mask, Split and a
    normalization over two dims, opset 6's broadcasting; and a model cut
    short."""
    try:
        import numpy as np
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        print("make-corpus: python3-onnx is not installed; no onnx seeds")
        return
    folder = reset("onnx")

    def model(nodes, inputs, outputs, initializers=()):
        graph = helper.make_graph(nodes, "seed", inputs, outputs,
                                  list(initializers))
        return helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 17)]
        ).SerializeToString()

    f = TensorProto.FLOAT
    x = helper.make_tensor_value_info("x", f, ["batch", "len", 8])
    y = helper.make_tensor_value_info("y", f, None)
    write(folder, "add.onnx", model(
        [helper.make_node("Add", ["x", "x"], ["s"]),
         helper.make_node("Relu", ["s"], ["y"])], [x], [y]))
    write(folder, "reshape.onnx", model(
        [helper.make_node("Shape", ["x"], ["shape"]),
         helper.make_node("Gather", ["shape", "zero"], ["b"]),
         helper.make_node("Unsqueeze", ["b", "axes"], ["b1"]),
         helper.make_node("Concat", ["b1", "rest"], ["target"], axis=0),
         helper.make_node("Reshape", ["x", "target"], ["y"])], [x], [y],
        [numpy_helper.from_array(np.array(0, np.int64), "zero"),
         numpy_helper.from_array(np.array([0], np.int64), "axes"),
         numpy_helper.from_array(np.array([-1, 2, 4], np.int64), "rest")]))
    write(folder, "attention.onnx", model(
        [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
         helper.make_node("MatMul", ["x", "xt"], ["scores"]),
         helper.make_node("Div", ["scores", "scale"], ["scaled"]),
         helper.make_node("Softmax", ["scaled"], ["p"], axis=-1),
         helper.make_node("MatMul", ["p", "x"], ["y"])], [x], [y],
        [numpy_helper.from_array(np.array(2.0, np.float32), "scale")]))
    a = helper.make_tensor_value_info("a", f, ["rows", 4])
    write(folder, "gemm.onnx", model(
        [helper.make_node("Gemm", ["a", "w", "b"], ["g"], transB=1),
         helper.make_node("LayerNormalization", ["g", "gamma", "beta"],
                          ["y"], epsilon=1e-5)], [a], [y],
        [numpy_helper.from_array(np.ones((3, 4), np.float32), "w"),
         numpy_helper.from_array(np.zeros(3, np.float32), "b"),
         numpy_helper.from_array(np.ones(3, np.float32), "gamma"),
         numpy_helper.from_array(np.zeros(3, np.float32), "beta")]))
    whole = model([helper.make_node("Neg", ["x"], ["y"])], [x], [y])
    write(folder, "cut.onnx", whole[:len(whole) // 2])
    # Depth: a chain of 2,000 elementwise nodes (mutations cut and rewire it).
    ops = ["Neg", "Relu", "Abs", "Tanh"]
    chain = [helper.make_node(ops[i % 4], ["x" if i == 0 else "c%d" % (i - 1)],
                              ["y" if i == 1999 else "c%d" % i])
             for i in range(2000)]
    write(folder, "chain.onnx", model(chain, [x], [y]))
    # A causal mask built at run time, as PyTorch translators export it, and
    # a masked_fill on scores.
    scores = helper.make_tensor_value_info("scores", f, ["batch", "n", "n"])
    write(folder, "causal-mask.onnx", model(
        [helper.make_node("Shape", ["scores"], ["shape"]),
         helper.make_node("Gather", ["shape", "one"], ["n"]),
         helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
         helper.make_node("Concat", ["n1", "n1"], ["square"], axis=0),
         helper.make_node("ConstantOfShape", ["square"], ["full"],
                          value=numpy_helper.from_array(
                              np.array([-np.inf], np.float32), "v")),
         helper.make_node("Trilu", ["full", "k"], ["mask"], upper=1),
         helper.make_node("Add", ["scores", "mask"], ["masked"]),
         helper.make_node("Equal", ["mask", "zero_f"], ["allowed"]),
         helper.make_node("Where", ["allowed", "masked", "fill"], ["filled"]),
         helper.make_node("Softmax", ["filled"], ["y"], axis=-1)],
        [scores], [y],
        [numpy_helper.from_array(np.array(1, np.int64), "one"),
         numpy_helper.from_array(np.array([0], np.int64), "axes"),
         numpy_helper.from_array(np.array(1, np.int64), "k"),
         numpy_helper.from_array(np.array(0.0, np.float32), "zero_f"),
         numpy_helper.from_array(np.array(-1e9, np.float32), "fill")]))
    write(folder, "split.onnx", model(
        [helper.make_node("Split", ["x", "parts"], ["p", "q"], axis=2),
         helper.make_node("LayerNormalization", ["p", "g2"], ["n"], axis=-2),
         helper.make_node("Mul", ["n", "q"], ["y"])], [x], [y],
        [numpy_helper.from_array(np.array([4, 4], np.int64), "parts"),
         numpy_helper.from_array(np.ones((1, 4), np.float32), "g2")]))
    old = helper.make_model(
        helper.make_graph(
            [helper.make_node("Mul", ["a", "b"], ["y"], broadcast=1, axis=0)],
            "seed", [helper.make_tensor_value_info("a", f, [3, 4]),
                     helper.make_tensor_value_info("b", f, [3])], [y]),
        opset_imports=[helper.make_opsetid("", 6)]).SerializeToString()
    write(folder, "old-broadcast.onnx", old)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loom", help="a built `loom`, for the executable seeds")
    args = parser.parse_args()
    configs()
    tensor_seeds()
    mlir_seeds()
    text_seeds()
    onnx_seeds()
    plot_seeds()
    dictionaries()
    if args.loom:
        executable_seeds(args.loom)


if __name__ == "__main__":
    main()
