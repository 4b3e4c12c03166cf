#!/usr/bin/env python3
"""Hostile-input probes for the loom tools.

Generates thousands of small runs of `loom`, `loom-opt` and `loom-translate`
on damaged or absurd inputs (configs, weights, executables, token ids, text,
corpora, command-line values, model directories, MLIR), each in a fresh
temporary directory with a time limit, and classifies every outcome:

  ok            the run did what the probe's oracle allows
  data-loss     a file or directory the run was given (or a model directory)
                changed, vanished, or something appeared outside the run's
                declared outputs (after a failing run: any change at all to
                what existed before, caches aside)
  crash         killed by a signal, exit code >= 128, or a crash report on
                stderr (segfault, LLVM ERROR, terminate called, assertion,
                sanitizer report, stack dump)
  hang          did not finish within --timeout seconds
  silent-wrong  exit 0 although the input was bad, or exit 0 with output that
                fails the probe's check
  unclear       exit != 0 without an `error:` line on stderr, or a message of
                many lines; or exit 0 with stderr that says error
  refused       exit != 0 on an input the probe considers valid

Standard library only. See README.md in this directory.
"""

import argparse
import hashlib
import json
import math
import os
import random
import re
import resource
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

CLASSES = ["data-loss", "crash", "hang", "silent-wrong", "unclear", "refused"]
FAMILIES = ["config", "weights", "executable", "ids", "text", "train", "cli",
            "average", "mlir", "modeldir", "bench", "plot", "onnx", "folder"]

# Expectations a probe declares about its input.
BAD = "error"      # the input is bad: a non-zero exit with one `error:` line
GOOD = "ok"        # the input is valid: exit 0 and the check passes
EITHER = "either"  # a clean refusal or a correct result

CRASH_PATTERNS = re.compile(
    r"Segmentation fault|LLVM ERROR|terminate called|Assertion[ `'].*failed|"
    r"AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|"
    r"runtime error:|Stack dump:|PLEASE submit a bug report|"
    r"^\s*#\d+ 0x[0-9a-f]+|double free|free\(\): invalid|malloc\(\): |"
    r"stack smashing detected|core dumped|std::bad_alloc|"
    r"libgomp: Thread creation failed|Illegal instruction|Bus error|"
    r"Floating point exception",
    re.M)
ERROR_LINE = re.compile(r"(^|: )error: \S", re.M)
ERROR_WORD = re.compile(r"\berror\b", re.I)

# Names the loom tools write into a directory they are given; used to clean
# up after a probe whose empty path made a tool write into the root. Only
# entries that did not exist before the run are removed.
LOOM_OUTPUT_NAMES = {"checkpoints", "spm.model", "config.pbtxt",
                     "metrics.jsonl", "model.safetensors", "translate.loomx",
                     "loom-translate", "loom-serve",
                     "libloom_sentencepiece.so"}
# Directories watched for such writes: the root and its lib/ (where an
# exported folder's lib/ lands when the folder is '').
WATCHED_DIRS = ["/", "/lib"]


# --------------------------------------------------------------------------
# Small utilities


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def snapshot(root):
    """Every entry under `root` (relative path -> description)."""
    entries = {}

    def describe(path):
        try:
            st = os.lstat(path)
        except OSError:
            return None
        if os.path.islink(path):
            return "link:" + os.readlink(path)
        if os.path.isdir(path):
            return "dir:%o" % (st.st_mode & 0o7777)
        if os.path.isfile(path):
            try:
                return "file:%d:%s" % (st.st_size, sha256_file(path))
            except OSError as e:
                return "file:unreadable:%s" % e.errno
        return "other:%o" % st.st_mode

    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            d = describe(full)
            if d is not None:
                entries[rel] = d
    return entries


def under(path, prefixes):
    for p in prefixes:
        p = p.rstrip("/")
        if p in ("", "."):
            return True
        if path == p or path.startswith(p + "/"):
            return True
    return False


def excerpt(data, limit=600):
    """The start (two thirds) and the end of a long text."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return text[:head] + "\n[... %d chars ...]\n" % (len(text) - limit) \
        + text[-(limit - head):]


def st_read(raw):
    """(header dict, data bytes) of a safetensors file's bytes."""
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def st_build(header, data, checksums=True):
    """The bytes of a safetensors file. When the header carries Loom's
    per-tensor checksums (`crc32:<name>` metadata), they are made to match the
    new content (`checksums`), so that a probe of the content reaches the
    checks of the content and not only the checksum."""
    if checksums:
        header = st_fix_checksums(header, data)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def st_fix_checksums(header, data):
    meta = header.get("__metadata__")
    if not isinstance(meta, dict) or not any(
            isinstance(k, str) and k.startswith("crc32:") for k in meta):
        return header
    header = dict(header)
    meta = {k: v for k, v in meta.items()
            if not (k.startswith("crc32:") and k[6:] not in header)}
    for name in st_tensor_names(header):
        entry = header[name]
        try:
            b, e = entry["data_offsets"]
            if not (isinstance(b, int) and isinstance(e, int)
                    and 0 <= b <= e <= len(data)):
                continue
        except (TypeError, ValueError, KeyError):
            continue
        meta["crc32:" + name] = "%08x" % (zlib.crc32(data[b:e]) & 0xffffffff)
    header["__metadata__"] = meta
    return header


def st_build_text(text, data):
    text = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(text)) + text + data


def st_tensor_names(header):
    return sorted(k for k in header if k != "__metadata__")


def st_values(path):
    """name -> list of floats of an F32/F64 safetensors file."""
    with open(path, "rb") as f:
        header, data = st_read(f.read())
    out = {}
    for name in st_tensor_names(header):
        h = header[name]
        b, e = h["data_offsets"]
        fmt = {"F32": "f", "F64": "d"}.get(h["dtype"])
        if fmt is None:
            continue
        size = struct.calcsize(fmt)
        out[name] = list(struct.unpack("<%d%s" % ((e - b) // size, fmt),
                                       data[b:e]))
    return out


def f32_bits(value):
    return struct.unpack("<I", struct.pack("<f", value))[0]


# --------------------------------------------------------------------------
# Probes


class Spec:
    """What one probe runs, built in its work directory."""

    def __init__(self, argv, stdin=b"", outputs=(), caches=(), check=None,
                 expect=None, timeout=None, lenient=False, watch_root=False,
                 env=None):
        self.argv = list(argv)
        self.stdin = stdin
        self.outputs = list(outputs)   # may be created or changed on success
        self.caches = list(caches)     # may be created or changed any time
        self.check = check             # fn(ctx, result) -> problem or None
        self.expect = expect           # overrides the probe's expectation
        self.timeout = timeout
        self.lenient = lenient         # many-line diagnostics are fine
        self.watch_root = watch_root   # also watch the root directory
        self.env = env or {}


class Probe:
    def __init__(self, family, name, desc, build, expect=BAD, slow=False,
                 key=False):
        self.family = family
        self.name = name
        self.desc = desc
        self.build = build             # fn(ctx) -> Spec
        self.expect = expect
        self.slow = slow               # trains or compiles a lot
        self.key = key                 # a reproducer of a known defect:
        #                                always in --quick


class Result:
    def __init__(self):
        self.rc = None
        self.stdout = b""
        self.stderr = b""
        self.timed_out = False
        self.seconds = 0.0


class Ctx:
    """A probe's work directory and the fixtures."""

    def __init__(self, work, fx, runner):
        self.work = work
        self.fx = fx
        self.runner = runner

    def path(self, rel):
        return os.path.join(self.work, rel)

    def write(self, rel, data):
        full = self.path(rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if isinstance(data, str):
            data = data.encode()
        with open(full, "wb") as f:
            f.write(data)
        return rel

    def read(self, rel):
        with open(self.path(rel), "rb") as f:
            return f.read()

    def mkdir(self, rel):
        os.makedirs(self.path(rel), exist_ok=True)
        return rel

    def copy(self, key, rel):
        """Copies fixture `key` (file or directory) to `rel`."""
        src = self.fx.paths[key]
        dst = self.path(rel)
        os.makedirs(os.path.dirname(dst) or self.work, exist_ok=True)
        if os.path.isdir(src):
            shutil.copytree(src, dst, symlinks=True)
        else:
            shutil.copyfile(src, dst)
            shutil.copymode(src, dst)
        return rel

    def fixture_bytes(self, key):
        with open(self.fx.paths[key], "rb") as f:
            return f.read()

    def tool(self, name):
        return self.runner.tool(name)

    def run(self, argv, stdin=b"", timeout=60):
        """Runs another command in the work directory (for checks)."""
        return self.runner.execute(argv, self.work, stdin, timeout, {})


# --------------------------------------------------------------------------
# Fixtures: a corpus, trained model directories, an exported folder,
# baselines. Built once per harness run.

SRC_WORDS = ["alpha", "bravo", "delta", "echo", "golf", "hotel", "kilo", "lima"]
TGT_WORDS = ["ah", "be", "de", "eh", "ge", "ha", "ka", "la"]
SRC_WORDS_C = ["mike", "oscar", "papa", "romeo", "sierra", "tango", "victor",
               "zulu"]
TGT_WORDS_C = ["mo", "os", "pa", "ro", "si", "ta", "vi", "zu"]


def make_corpus(prefix, lines, seed, src_words=SRC_WORDS, tgt_words=TGT_WORDS):
    rng = random.Random(seed)
    src, tgt = [], []
    for _ in range(lines):
        words = [rng.randrange(len(src_words)) for _ in range(rng.randint(2, 6))]
        src.append(" ".join(src_words[w] for w in words))
        tgt.append(" ".join(tgt_words[w] for w in reversed(words)))
    with open(prefix + ".src", "w") as f:
        f.write("".join(s + "\n" for s in src))
    with open(prefix + ".tgt", "w") as f:
        f.write("".join(t + "\n" for t in tgt))
    return src, tgt


class Fixtures:
    def __init__(self, root, runner, log):
        self.root = root
        self.runner = runner
        self.log = log
        self.paths = {}
        self.baseline = {}

    def p(self, key, rel):
        self.paths[key] = os.path.join(self.root, rel)
        return self.paths[key]

    def must(self, argv, what, stdin=b"", timeout=600):
        r = self.runner.execute(argv, self.root, stdin, timeout, {})
        if r.timed_out or r.rc != 0:
            raise SystemExit("probe: cannot build fixture (%s): exit %s\n%s"
                             % (what, r.rc, excerpt(r.stderr, 2000)))
        return r

    def build(self):
        t0 = time.time()
        loom = self.runner.tool("loom")
        os.makedirs(self.root, exist_ok=True)
        self.valid_src, _ = make_corpus(self.p("valid", "valid"), 20, 2)
        self.p("valid.src", "valid.src")
        self.p("valid.tgt", "valid.tgt")
        make_corpus(self.p("train", "train"), 300, 1)
        self.p("train.src", "train.src")
        self.p("train.tgt", "train.tgt")
        make_corpus(os.path.join(self.root, "trainc"), 300, 5,
                    SRC_WORDS_C, TGT_WORDS_C)
        self.p("trainc.src", "trainc.src")
        self.p("trainc.tgt", "trainc.tgt")
        self.log("building fixtures in %s" % self.root)
        common = ["--preset", "tiny", "--max-tokens", "256", "--threads", "1",
                  "--progress", "lines"]
        # Model A: the one most probes use; two checkpoints.
        self.must([loom, "train"] + common +
                  ["--train", "train.src", "train.tgt", "--out", "modelA",
                   "--warmup", "30", "--steps", "400", "--valid-every", "200",
                   "--log-every", "200", "--seed", "3"], "train model A")
        self.p("modelA", "modelA")
        # Model B: another corpus and another vocabulary size.
        self.must([loom, "train"] + common +
                  ["--train", "trainc.src", "trainc.tgt", "--out", "modelB",
                   "--vocab-size", "28", "--warmup", "4", "--steps", "10",
                   "--valid-every", "5", "--log-every", "10"], "train model B")
        self.p("modelB", "modelB")
        # Model C: another vocabulary of the same size as A's.
        self.must([loom, "train"] + common +
                  ["--train", "trainc.src", "trainc.tgt", "--out", "modelC",
                   "--warmup", "4", "--steps", "10", "--log-every", "10",
                   "--seed", "2"], "train model C")
        self.p("modelC", "modelC")
        # A model directory without checkpoints (as after averaging or when
        # copied elsewhere).
        shutil.copytree(self.paths["modelA"], self.p("modelA-nockpt",
                                                     "modelA-nockpt"))
        shutil.rmtree(os.path.join(self.paths["modelA-nockpt"], "checkpoints"))
        self.must([loom, "export", "--model", "modelA", "-o", "exportA"],
                  "export model A")
        self.p("exportA", "exportA")
        self.must([loom, "compile", "--preset", "tiny", "--target", "cpu",
                   "--max-tokens", "256", "-o", "full.loomx"],
                  "compile tiny")
        self.p("full.loomx", "full.loomx")
        self.must([loom, "compile", "--preset", "tiny", "--target", "cpu",
                   "--cpu", "x86-64-v2", "--max-tokens", "256",
                   "-o", "v2.loomx"], "compile tiny for x86-64-v2")
        self.p("v2.loomx", "v2.loomx")
        ma = self.paths["modelA"]
        self.p("config", "modelA/config.pbtxt")
        self.p("weights", "modelA/model.safetensors")
        self.p("loomx", "modelA/translate.loomx")
        self.p("spm", "modelA/spm.model")
        ckpts = sorted(os.listdir(os.path.join(ma, "checkpoints")),
                       key=lambda n: int(re.sub(r"\D", "", n) or 0))
        self.ckpt_names = ckpts
        self.p("ckpt.first", "modelA/checkpoints/" + ckpts[0])
        self.p("ckpt.last", "modelA/checkpoints/" + ckpts[-1])
        self.p("weightsB", "modelB/model.safetensors")
        self.p("weightsC", "modelC/model.safetensors")
        self.p("loomxB", "modelB/translate.loomx")
        self.p("loomxC", "modelC/translate.loomx")
        self.p("spmB", "modelB/spm.model")
        self.p("spmC", "modelC/spm.model")
        self.p("configB", "modelB/config.pbtxt")
        # Token ids and a gradient file.
        rng = random.Random(11)
        src_ids, tgt_ids = [], []
        for _ in range(3):
            src_ids.append([rng.randrange(4, 32) for _ in range(rng.randint(2, 6))] + [3])
            tgt_ids.append([2] + [rng.randrange(4, 32) for _ in range(rng.randint(2, 6))] + [3])
        self.src_ids, self.tgt_ids = src_ids, tgt_ids
        with open(self.p("src.ids", "src.ids"), "w") as f:
            f.write("".join(" ".join(map(str, l)) + "\n" for l in src_ids))
        with open(self.p("tgt.ids", "tgt.ids"), "w") as f:
            f.write("".join(" ".join(map(str, l)) + "\n" for l in tgt_ids))
        self.must([loom, "grad", "--config", "modelA/config.pbtxt",
                   "--weights", "modelA/model.safetensors", "--src-ids",
                   "src.ids", "--tgt-ids", "tgt.ids", "--out", "grad.safetensors",
                   "--threads", "1"], "grad")
        self.p("grad", "grad.safetensors")
        # Baselines.
        tr = [loom, "translate", "--model", "modelA", "--input", "valid.src",
              "--threads", "1"]
        self.baseline["greedy"] = self.must(tr + ["--beam", "1"],
                                            "translate greedy").stdout
        self.baseline["beam"] = self.must(tr, "translate beam").stdout
        self.baseline["long-ratio"] = self.must(
            tr + ["--beam", "1", "--max-len-ratio", "100"],
            "translate long ratio").stdout
        lines = self.baseline["greedy"].decode().split("\n")[:-1]
        self.greedy_of = dict(zip(self.valid_src, lines))
        self.baseline_for_six = ("".join(l + "\n" for l in lines[:6])).encode()
        long_lines = self.baseline["long-ratio"].decode().split("\n")[:-1]
        self.long_ratio_six = ("".join(l + "\n" for l in long_lines[:6])).encode()
        if sum(1 for l in lines if l.strip()) < len(lines) // 2:
            self.log("warning: model A translates most lines to nothing; "
                     "checks of translations are weak")
        fw = [loom, "forward", "--config", "modelA/config.pbtxt", "--weights",
              "modelA/model.safetensors", "--src-ids", "src.ids",
              "--tgt-ids", "tgt.ids", "--threads", "1"]
        self.baseline["forward-cpu"] = self.must(fw, "forward cpu").stdout
        self.baseline["forward-interpreter"] = self.must(
            fw + ["--backend", "interpreter"], "forward interpreter").stdout
        with open(self.paths["weights"], "rb") as f:
            self.weights_header, self.weights_data = st_read(f.read())
        self.log("fixtures ready in %.1fs" % (time.time() - t0))


# --------------------------------------------------------------------------
# Checks shared by probes


def lines_of(data):
    text = data.decode("utf-8", "replace")
    if text == "":
        return []
    if text.endswith("\n"):
        text = text[:-1]
    return text.split("\n")


def check_same(expected, what="the output"):
    def check(ctx, r):
        if r.stdout != expected:
            return "%s differs from the baseline run: got %r, expected %r" % (
                what, excerpt(r.stdout, 200), excerpt(expected, 200))
        return None
    return check


def check_line_count(n):
    def check(ctx, r):
        got = len(lines_of(r.stdout))
        if got != n:
            return "printed %d lines for %d input lines" % (got, n)
        return None
    return check


def check_translations(expected_lines):
    """expected_lines: per output line, the translation it must be, or None
    for any text."""
    def check(ctx, r):
        got = lines_of(r.stdout)
        if len(got) != len(expected_lines):
            return "printed %d lines, expected %d" % (len(got),
                                                      len(expected_lines))
        for i, (g, e) in enumerate(zip(got, expected_lines)):
            if e is not None and g != e:
                return "line %d is %r, expected %r" % (i + 1, g, e)
        return None
    return check


def check_forward_shape(src, tgt):
    def check(ctx, r):
        got = lines_of(r.stdout)
        if len(got) != len(tgt):
            return "printed %d lines for %d pairs" % (len(got), len(tgt))
        for i, (line, t) in enumerate(zip(got, tgt)):
            values = line.split()
            if len(values) != max(0, len(t) - 1):
                return "line %d has %d values for a target of %d tokens" % (
                    i + 1, len(values), len(t))
            for v in values:
                try:
                    x = float(v)
                except ValueError:
                    return "line %d holds %r, not a number" % (i + 1, v)
                if not math.isfinite(x) or x > 1e-6:
                    return "line %d holds %r, not a log-probability" % (i + 1, v)
        return None
    return check


def check_weights_file(rel, names=None):
    def check(ctx, r):
        path = ctx.path(rel)
        if not os.path.isfile(path):
            return "exit 0 but '%s' was not written" % rel
        try:
            values = st_values(path)
        except Exception as e:  # noqa: BLE001
            return "'%s' is not a readable safetensors file: %s" % (rel, e)
        for name, v in values.items():
            if not all(math.isfinite(x) for x in v):
                return "'%s' holds non-finite values in %s" % (rel, name)
        if names is not None and sorted(values) != sorted(names):
            return "'%s' holds tensors %s..., expected %s..." % (
                rel, sorted(values)[:3], sorted(names)[:3])
        return None
    return check


def check_file(rel, prefix=None):
    def check(ctx, r):
        path = ctx.path(rel)
        if not os.path.isfile(path) or os.path.getsize(path) == 0:
            return "exit 0 but '%s' was not written" % rel
        if prefix is not None:
            with open(path, "rb") as f:
                if not f.read(len(prefix)) == prefix:
                    return "'%s' does not start with %r" % (rel, prefix)
        return None
    return check


def all_checks(*checks):
    def check(ctx, r):
        for c in checks:
            if c is None:
                continue
            problem = c(ctx, r)
            if problem:
                return problem
        return None
    return check


# --------------------------------------------------------------------------
# Common command lines

def translate_argv(model="m", extra=()):
    return ["loom", "translate", "--model", model, "--threads", "1"] + list(extra)


def forward_argv(cfg="c.pbtxt", weights="w.safetensors", src="s.ids",
                 tgt="t.ids", backend="cpu", extra=()):
    return ["loom", "forward", "--config", cfg, "--weights", weights,
            "--src-ids", src, "--tgt-ids", tgt, "--backend", backend,
            "--threads", "1"] + list(extra)


def grad_argv(cfg="c.pbtxt", weights="w.safetensors", src="s.ids",
              tgt="t.ids", out="g.safetensors", backend="cpu", extra=()):
    return ["loom", "grad", "--config", cfg, "--weights", weights,
            "--src-ids", src, "--tgt-ids", tgt, "--out", out, "--backend",
            backend, "--threads", "1"] + list(extra)


def train_argv(src="tr.src", tgt="tr.tgt", out="run", steps=2, preset="tiny",
               extra=()):
    argv = ["loom", "train"]
    if preset:
        argv += ["--preset", preset]
    return argv + ["--train", src, tgt, "--out", out, "--max-tokens", "256",
                   "--warmup", "4", "--steps", str(steps), "--log-every", "1",
                   "--threads", "1", "--progress", "lines"] + list(extra)


def setup_forward(ctx):
    ctx.copy("config", "c.pbtxt")
    ctx.copy("weights", "w.safetensors")
    ctx.copy("src.ids", "s.ids")
    ctx.copy("tgt.ids", "t.ids")


def setup_train(ctx, lines=60):
    src = ctx.fixture_bytes("train.src").split(b"\n")[:lines]
    tgt = ctx.fixture_bytes("train.tgt").split(b"\n")[:lines]
    ctx.write("tr.src", b"\n".join(src) + b"\n")
    ctx.write("tr.tgt", b"\n".join(tgt) + b"\n")


def unwritable_dir():
    """A directory no file can be created in, even as root."""
    if os.geteuid() == 0:
        return "/proc/loom-probe-nonexistent"
    return None


# --------------------------------------------------------------------------
# Family: configs (.pbtxt)

INT_FIELDS = ["d_model", "heads", "d_ff", "encoder_layers", "decoder_layers",
              "src_vocab", "tgt_vocab", "max_len"]
FLOAT_FIELDS = ["dropout", "label_smoothing", "layer_norm_eps"]
BOOL_FIELDS = ["final_norm", "share_embeddings", "tie_output"]


def set_field(text, field, value):
    """The config text with `field: value` (replacing any earlier line)."""
    lines = [l for l in text.split("\n")
             if not re.match(r"\s*%s\s*:" % re.escape(field), l)]
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines + ["%s: %s" % (field, value)]) + "\n"


def config_mutations(rng):
    """(name, fn(text) -> bytes, kind); kind: bad, huge, benign or same."""
    muts = []

    def field(f, v, kind):
        muts.append(("%s=%s" % (f, v if len(str(v)) < 24 else str(v)[:20] + "..."),
                     lambda t, f=f, v=v: set_field(t, f, v).encode(), kind))

    for f in INT_FIELDS:
        for v, kind in [("0", "bad"), ("-1", "bad"),
                        ("-9223372036854775808", "bad"),
                        ("9223372036854775807", "huge"),
                        ("9223372036854775808", "bad"),
                        ("2147483648", "huge"), ("4294967296", "huge"),
                        ("576460752303423488", "huge"), ("1048576", "either"),
                        ("1e3", "bad"), ("abc", "bad"), ('"32"', "bad"),
                        ("3.5", "bad"), ("", "bad")]:
            if f == "max_len" and v == "0":
                continue  # 0 means the default
            if f == "max_len" and kind == "huge":
                kind = "either"  # a bound; translate's cache is modeldir's
            field(f, v, kind)
    field("d_model", "33", "bad")
    muts.append(("heads-not-dividing",
                 lambda t: set_field(set_field(t, "d_model", "30"), "heads",
                                     "4").encode(), "bad"))
    field("src_vocab", "1", "bad")
    field("tgt_vocab", "1", "bad")
    field("max_len", "1", "benign")
    field("max_len", "2", "benign")
    field("heads", "32", "benign")
    field("d_model", "0x20", "same")
    field("d_model", "040", "benign")
    for f in FLOAT_FIELDS:
        for v, kind in [("nan", "bad"), ("inf", "bad"), ("-inf", "bad"),
                        ("-1", "bad"),
                        ("1", "bad" if f != "layer_norm_eps" else "benign"),
                        ("1e308", "bad" if f != "layer_norm_eps" else "benign"),
                        ("1e-320", "same" if f != "layer_norm_eps" else "benign"),
                        ("-0.0", "same" if f != "layer_norm_eps" else "bad"),
                        ("x", "bad"), ('"0.1"', "bad")]:
            field(f, v, kind)
    field("dropout", "0.9999999", "same")
    field("label_smoothing", "0.5", "same")
    field("layer_norm_eps", "1e30", "benign")
    for v, kind in [("2", "bad"), ("7", "bad"), ("-1", "bad"),
                    ("2147483648", "bad"), ("FOO", "bad"), ("pre", "bad"),
                    ('"PRE"', "bad"), ("PRE", "benign"), ("1", "benign")]:
        field("norm", v, kind)
    for f in BOOL_FIELDS:
        for v, kind in [("2", "bad"), ("yes", "bad"), ("-1", "bad"),
                        ("t", "benign"), ("True", "benign")]:
            field(f, v, kind)
    muts.append(("share-embeddings-vocab-mismatch",
                 lambda t: set_field(set_field(t, "share_embeddings", "true"),
                                     "src_vocab", "40").encode(), "bad"))
    # Products that overflow int64 (each factor fits).
    for name, fields in [
            ("overflow-embed", {"src_vocab": 4294967296, "tgt_vocab": 4294967296,
                                "d_model": 4294967296, "heads": 1}),
            ("overflow-ffn", {"d_model": 4294967296, "d_ff": 4294967296,
                              "heads": 1}),
            ("overflow-layers", {"encoder_layers": 4611686018427387904,
                                 "decoder_layers": 4611686018427387904}),
            ("overflow-vocab-2^59", {"src_vocab": 576460752303423488,
                                     "tgt_vocab": 576460752303423488}),
            ("overflow-maxlen", {"max_len": 4611686018427387904,
                                 "d_model": 1024, "heads": 2}),
            ("d_model-2^31", {"d_model": 2147483648, "heads": 1})]:
        def mut(t, fields=fields):
            for f, v in fields.items():
                t = set_field(t, f, v)
            return t.encode()
        muts.append((name, mut, "huge"))
    # Structure.
    muts.append(("empty-file", lambda t: b"", "bad"))
    muts.append(("only-comments", lambda t: b"# nothing\n# here\n", "bad"))
    muts.append(("unknown-field", lambda t: (t + "colour: 3\n").encode(), "bad"))
    muts.append(("unknown-field-first", lambda t: ("zzz: 1\n" + t).encode(), "bad"))
    muts.append(("duplicate-field",
                 lambda t: (t + "d_model: 64\n").encode(), "bad"))
    muts.append(("duplicate-same-value",
                 lambda t: (t + "heads: 2\n").encode(), "bad"))
    muts.append(("nested-message", lambda t: (t + "d_model { }\n").encode(), "bad"))
    muts.append(("unterminated-string",
                 lambda t: (t + 'norm: "PRE\n').encode(), "bad"))
    muts.append(("nul-byte", lambda t: t.encode()[:10] + b"\0" + t.encode()[10:],
                 "bad"))
    muts.append(("utf8-bom", lambda t: b"\xef\xbb\xbf" + t.encode(), "bad"))
    muts.append(("crlf-lines", lambda t: t.replace("\n", "\r\n").encode(), "same"))
    muts.append(("one-line", lambda t: t.replace("\n", " ").encode(), "same"))
    muts.append(("semicolons", lambda t: t.replace("\n", ";\n").encode(), "same"))
    muts.append(("comment-lines",
                 lambda t: ("# a comment\n" + t + "# end\n").encode(), "same"))
    muts.append(("trailing-garbage", lambda t: (t + "}}}\n").encode(), "bad"))
    muts.append(("json-syntax",
                 lambda t: json.dumps({"d_model": 32, "heads": 2}).encode(), "bad"))
    muts.append(("long-number", lambda t: set_field(t, "d_model", "9" * 100000)
                 .encode(), "bad"))
    muts.append(("deep-nesting",
                 lambda t: (t + "d_model " + "{" * 50000 + "}" * 50000)
                 .encode(), "bad"))
    muts.append(("whitespace-10MB", lambda t: (t + " " * (10 << 20)).encode(),
                 "either"))
    muts.append(("invalid-utf8-comment",
                 lambda t: (t + "# \xff\n").encode("latin-1"), "either"))
    for i in range(8):
        seed = rng.randrange(1 << 30)
        size = rng.choice([1, 16, 200, 4096])
        muts.append(("binary-garbage-%d" % i,
                     lambda t, seed=seed, size=size:
                     random.Random(seed).randbytes(size)
                     if hasattr(random.Random, "randbytes") else
                     bytes(random.Random(seed).randrange(256) for _ in range(size)),
                     "bad"))
    for i in range(6):
        seed = rng.randrange(1 << 30)

        def flip(t, seed=seed):
            b = bytearray(t.encode())
            r = random.Random(seed)
            pos = r.randrange(len(b))
            b[pos] = r.choice(b"{}:\"'#\\\0\xff-9 \n")
            return bytes(b)
        muts.append(("byte-edit-%d" % i, flip, "either"))
    return muts


KEY_CONFIG = {"d_model=2147483648": ["forward-cpu"],
              "overflow-vocab-2^59": ["compile-cpu", "forward-cpu"],
              "norm=7": ["compile-ir", "forward-cpu"]}

CONFIG_CONSUMERS = ["compile-ir", "compile-cpu", "forward-cpu",
                    "forward-interpreter", "train", "bench-train",
                    "bench-decode", "grad-interpreter"]


def config_consumer_spec(consumer, kind, ctx):
    """Spec for a config probe; the config is in c.pbtxt."""
    same_fwd = None
    if consumer == "compile-ir":
        expect = BAD if kind == "bad" else EITHER
        return Spec(["loom", "compile", "--config", "c.pbtxt", "-o", "out.mlir"],
                    outputs=["out.mlir"], expect=expect,
                    check=check_file("out.mlir"))
    if consumer == "compile-cpu":
        expect = BAD if kind == "bad" else EITHER
        return Spec(["loom", "compile", "--config", "c.pbtxt", "--target", "cpu",
                     "--max-tokens", "64", "--max-len", "16", "--max-batch",
                     "4", "-o", "out.loomx"],
                    outputs=["out.loomx"], expect=expect,
                    check=check_file("out.loomx", b"LOOMEXE"))
    expect = BAD if kind in ("bad", "huge") else EITHER
    if consumer.startswith("forward-"):
        ctx.copy("weights", "w.safetensors")
        ctx.copy("src.ids", "s.ids")
        ctx.copy("tgt.ids", "t.ids")
        backend = consumer.split("-", 1)[1]
        check = check_forward_shape(ctx.fx.src_ids, ctx.fx.tgt_ids)
        if kind == "same":
            expect = GOOD
            check = check_same(ctx.fx.baseline["forward-" + backend])
        return Spec(forward_argv(backend=backend), expect=expect, check=check)
    if consumer == "grad-interpreter":
        ctx.copy("weights", "w.safetensors")
        ctx.copy("src.ids", "s.ids")
        ctx.copy("tgt.ids", "t.ids")
        return Spec(grad_argv(backend="interpreter"), outputs=["g.safetensors"],
                    expect=GOOD if kind == "same" else expect,
                    check=check_weights_file("g.safetensors"))
    if consumer == "train":
        setup_train(ctx)
        return Spec(train_argv(preset=None, extra=["--config", "c.pbtxt"]),
                    outputs=["run"], expect=expect,
                    check=check_model_dir("run"))
    if consumer.startswith("bench-"):
        return Spec(["loom", "bench", consumer.split("-")[1], "--config",
                     "c.pbtxt", "--batch", "2", "--src-len", "4",
                     "--tgt-len", "4", "--steps", "1", "--warmup", "0",
                     "--threads", "1"], expect=expect,
                    check=check_bench_json)
    raise ValueError(consumer)


def check_bench_json(ctx, r):
    try:
        line = json.loads(r.stdout.decode().strip().split("\n")[-1])
    except Exception:  # noqa: BLE001
        return "stdout is not one JSON line: %r" % excerpt(r.stdout, 200)
    for k in ("tokens_per_s", "step_ms_median"):
        v = line.get(k)
        if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            return "%s is %r" % (k, v)
    return None


def check_model_dir(rel):
    def check(ctx, r):
        for name in ("spm.model", "config.pbtxt", "model.safetensors",
                     "translate.loomx"):
            if not os.path.isfile(ctx.path(rel + "/" + name)):
                return "exit 0 but '%s/%s' is missing" % (rel, name)
        return check_weights_file(rel + "/model.safetensors")(ctx, r)
    return check


def fam_config(seed):
    rng = random.Random("config:%d" % seed)
    probes = []
    muts = config_mutations(rng)
    for name, fn, kind in muts:
        consumers = ["compile-ir"] + rng.sample(CONFIG_CONSUMERS[1:], 2)
        for c in KEY_CONFIG.get(name, []):
            if c not in consumers:
                consumers.append(c)
        for consumer in consumers:
            def build(ctx, fn=fn, consumer=consumer, kind=kind, name=name):
                text = ctx.fixture_bytes("config").decode()
                ctx.write("c.pbtxt", fn(text))
                if consumer == "train" and kind == "huge" and \
                        name.startswith("src_vocab="):
                    # train sets both vocabularies to SentencePiece's size
                    kind = "either"
                return config_consumer_spec(consumer, kind, ctx)
            probes.append(Probe(
                "config", "config/%s/%s" % (name, consumer),
                "config %s (%s)" % (name, kind), build,
                expect=BAD if kind == "bad" else EITHER,
                slow=consumer in ("train",) or (kind == "huge" and (
                    "layers" in name or "d_model" in name)),
                key=consumer in KEY_CONFIG.get(name, [])))
    # The config is a directory, missing, a device.
    for name, setup, consumer in [
            ("directory", lambda ctx: ctx.mkdir("c.pbtxt"), "compile-ir"),
            ("directory", lambda ctx: ctx.mkdir("c.pbtxt"), "forward-cpu"),
            ("directory", lambda ctx: ctx.mkdir("c.pbtxt"), "train"),
            ("missing", lambda ctx: None, "compile-ir"),
            ("missing", lambda ctx: None, "bench-train"),
            ("dev-null", lambda ctx: os.symlink("/dev/null", ctx.path("c.pbtxt")),
             "compile-ir"),
            ("weights-file", lambda ctx: ctx.copy("weights", "c.pbtxt"),
             "compile-ir"),
            ("loomx-file", lambda ctx: ctx.copy("loomx", "c.pbtxt"), "compile-ir"),
            ("dangling-symlink",
             lambda ctx: os.symlink("nowhere.pbtxt", ctx.path("c.pbtxt")),
             "compile-ir")]:
        def build(ctx, setup=setup, consumer=consumer):
            setup(ctx)
            return config_consumer_spec(consumer, "bad", ctx)
        probes.append(Probe("config", "config/%s/%s" % (name, consumer),
                            "config is %s" % name, build,
                            slow=consumer == "train"))
    return probes


# --------------------------------------------------------------------------
# Family: weights (safetensors)


def weights_mutations(rng):
    """(name, fn(raw) -> bytes or (bytes, kind), kind); kind: bad, either,
    same. Positions and tensor names are taken from the file at build time."""
    muts = []

    def layout(raw):
        h, d = st_read(raw)
        return h, d, struct.unpack("<Q", raw[:8])[0]

    def rebuild(fn):
        def mut(raw):
            h, d = st_read(raw)
            out = fn(h, d)
            return out if isinstance(out, bytes) else st_build(*out)
        return mut

    def nth(h, i):
        return st_tensor_names(h)[i]

    # Truncations: (label, offset from the raw bytes).
    cuts = [("0", lambda raw, n: 0), ("1", lambda raw, n: 1),
            ("4", lambda raw, n: 4), ("7", lambda raw, n: 7),
            ("8", lambda raw, n: 8), ("9", lambda raw, n: 9),
            ("mid-header", lambda raw, n: 8 + n // 2),
            ("header-end-minus-1", lambda raw, n: 8 + n - 1),
            ("header-end", lambda raw, n: 8 + n),
            ("header-end-plus-1", lambda raw, n: 8 + n + 1),
            ("half", lambda raw, n: len(raw) // 2),
            ("minus-4", lambda raw, n: len(raw) - 4),
            ("minus-1", lambda raw, n: len(raw) - 1)]
    for label, at in cuts:
        muts.append(("truncate-%s" % label,
                     lambda raw, at=at: raw[:at(raw, layout(raw)[2])], "bad"))
    muts.append(("append-1-byte", lambda raw: raw + b"\0", "either"))
    muts.append(("append-4096-bytes", lambda raw: raw + b"\x7f" * 4096, "either"))
    for label, v in [("0", lambda n, raw: 0), ("1", lambda n, raw: 1),
                     ("2", lambda n, raw: 2), ("n-1", lambda n, raw: n - 1),
                     ("n+1", lambda n, raw: n + 1),
                     ("file-size", lambda n, raw: len(raw)),
                     ("2^32", lambda n, raw: 1 << 32),
                     ("2^62", lambda n, raw: 1 << 62),
                     ("2^64-1", lambda n, raw: (1 << 64) - 1),
                     ("2^63+5", lambda n, raw: (1 << 63) + 5)]:
        muts.append(("header-length-%s" % label,
                     lambda raw, v=v: struct.pack(
                         "<Q", v(layout(raw)[2], raw)) + raw[8:], "bad"))
    muts.append(("header-not-json",
                 rebuild(lambda h, d: st_build_text(b"x" * 40, d)), "bad"))
    muts.append(("header-json-array",
                 rebuild(lambda h, d: st_build_text(b"[1, 2]", d)), "bad"))
    muts.append(("header-null", rebuild(lambda h, d: st_build_text(b"null", d)),
                 "bad"))
    muts.append(("header-empty-object",
                 rebuild(lambda h, d: st_build_text(b"{}", d)), "bad"))
    muts.append(("header-deep-nesting",
                 rebuild(lambda h, d: st_build_text(
                     b"[" * 200000 + b"]" * 200000, d)), "bad"))
    muts.append(("header-nul-byte",
                 rebuild(lambda h, d: st_build_text(
                     json.dumps(h).encode().replace(b'"F32"', b'"F\x0032"', 1),
                     d)), "bad"))
    muts.append(("header-invalid-utf8",
                 rebuild(lambda h, d: st_build_text(
                     json.dumps(h).encode().replace(b"weight", b"w\xffight", 1),
                     d)), "bad"))
    muts.append(("header-trailing-spaces",
                 rebuild(lambda h, d: st_build_text(json.dumps(h) + "        ",
                                                    d)), "same"))

    def dup(h, d):
        a, b = nth(h, 0), nth(h, 1)
        text = json.dumps(h)
        extra = json.dumps({a: {"dtype": "F32", "shape": h[a]["shape"],
                                "data_offsets": h[b]["data_offsets"]}})
        return st_build_text(text[:-1] + ", " + extra[1:], d)
    muts.append(("duplicate-tensor-key", rebuild(dup), "bad"))

    def edit(label, key, value, kind):
        """Sets `key` of the second tensor (a 2-D weight) to value(h)."""
        def fn(h, d):
            name = nth(h, 1)
            h[name][key] = value(h, name)
            return h, d
        muts.append((label, rebuild(fn), kind))

    for dt in ["F8", "I32", "U32", "F16", "BOOL", "", 32, None, "f32"]:
        edit("dtype=%s" % dt, "dtype", lambda h, n, dt=dt: dt, "bad")
    for label, shp in [
            ("scalar", lambda s: []), ("negative", lambda s: [-1, s[1]]),
            ("zero", lambda s: [0]), ("extra-dim", lambda s: [1] + s),
            ("transposed", lambda s: list(reversed(s))),
            ("flattened", lambda s: [s[0] * s[1]]),
            ("2^62x2^62", lambda s: [1 << 62, 1 << 62]),
            ("2^31x2^31x4", lambda s: [1 << 31, 1 << 31, 4]),
            ("float-dim", lambda s: [s[0] + 0.5, s[1]]),
            ("string", lambda s: "%dx%d" % tuple(s)), ("null", lambda s: None),
            ("one-more-row", lambda s: [s[0] + 1, s[1]])]:
        edit("shape-%s" % label, "shape",
             lambda h, n, shp=shp: shp(h[n]["shape"]), "bad")
    for label, off in [
            ("reversed", lambda b, e, o: [e, b]),
            ("4-past", lambda b, e, o: [b, e + 4]),
            ("2^62", lambda b, e, o: [b, 1 << 62]),
            ("negative", lambda b, e, o: [-4, e]),
            ("2^64-1", lambda b, e, o: [b, (1 << 64) - 1]),
            ("float", lambda b, e, o: [b + 0.5, e]),
            ("one-number", lambda b, e, o: [b]), ("null", lambda b, e, o: None),
            ("shifted", lambda b, e, o: [b + 4, e + 4]),
            ("other-tensor", lambda b, e, o: o)]:
        edit("offsets-%s" % label, "data_offsets",
             lambda h, n, off=off: off(h[n]["data_offsets"][0],
                                       h[n]["data_offsets"][1],
                                       h[nth(h, 0)]["data_offsets"]), "bad")

    def without(h, d):
        del h[nth(h, 3)]
        return h, d
    muts.append(("missing-tensor", rebuild(without), "bad"))

    def extra(h, d):
        h["foo.weight"] = {"dtype": "F32", "shape": [1],
                           "data_offsets": [len(d), len(d) + 4]}
        return h, d + b"\0\0\0\0"
    muts.append(("extra-tensor", rebuild(extra), "bad"))

    def renamed(h, d):
        h[nth(h, 2) + "x"] = h.pop(nth(h, 2))
        return h, d
    muts.append(("renamed-tensor", rebuild(renamed), "bad"))

    def meta(value):
        def fn(h, d):
            h["__metadata__"] = value
            return h, d
        return fn
    muts.append(("metadata-number", rebuild(meta({"a": 1})), "either"))
    muts.append(("metadata-list", rebuild(meta([1, 2])), "either"))
    muts.append(("metadata-strings", rebuild(meta({"format": "pt"})), "same"))

    def pick(h, what):
        names = st_tensor_names(h)
        if what == "linear":
            return names[1]
        if what == "layernorm":
            return [n for n in names if "norm" in n and n.endswith("weight")][0]
        return [n for n in names if "embed" in n][0]

    def set_value(what, index, value, kind, label):
        def fn(h, d):
            name = pick(h, what)
            b, _ = h[name]["data_offsets"]
            d = bytearray(d)
            d[b + 4 * index:b + 4 * index + 4] = struct.pack("<f", value)
            return h, bytes(d)
        muts.append((label, rebuild(fn), kind))
    for what in ["linear", "layernorm", "embedding"]:
        set_value(what, 0, float("nan"), "bad", "nan-in-%s" % what)
        set_value(what, 1, float("inf"), "bad", "inf-in-%s" % what)
        set_value(what, 2, float("-inf"), "bad", "-inf-in-%s" % what)
    set_value("linear", 0, 3.0e38, "either", "huge-value")
    set_value("linear", 0, 1e-44, "either", "denormal-value")

    def all_nan(h, d):
        b, e = h[nth(h, 1)]["data_offsets"]
        return h, d[:b] + struct.pack("<f", float("nan")) * ((e - b) // 4) + d[e:]
    muts.append(("all-nan-tensor", rebuild(all_nan), "bad"))

    def to_f64(h, d):
        out = b""
        for n in st_tensor_names(h):
            b, e = h[n]["data_offsets"]
            vals = struct.unpack("<%df" % ((e - b) // 4), d[b:e])
            blob = struct.pack("<%dd" % len(vals), *vals)
            h[n] = {"dtype": "F64", "shape": h[n]["shape"],
                    "data_offsets": [len(out), len(out) + len(blob)]}
            out += blob
        return h, out
    muts.append(("all-f64", rebuild(to_f64), "same"))

    def to_bf16(h, d):
        out = b""
        for n in st_tensor_names(h):
            b, e = h[n]["data_offsets"]
            blob = b"".join(d[i + 2:i + 4] for i in range(b, e, 4))
            h[n] = {"dtype": "BF16", "shape": h[n]["shape"],
                    "data_offsets": [len(out), len(out) + len(blob)]}
            out += blob
        return h, out
    muts.append(("all-bf16", rebuild(to_bf16), "either"))

    def reorder(h, d):
        out = b""
        for n in reversed(st_tensor_names(h)):
            b, e = h[n]["data_offsets"]
            h[n] = dict(h[n], data_offsets=[len(out), len(out) + e - b])
            out += d[b:e]
        return h, out
    muts.append(("reordered-data", rebuild(reorder), "same"))

    def gap(h, d):
        out = b""
        for n in st_tensor_names(h):
            b, e = h[n]["data_offsets"]
            out += b"\0" * 8
            h[n] = dict(h[n], data_offsets=[len(out), len(out) + e - b])
            out += d[b:e]
        return h, out
    muts.append(("holes-between-tensors", rebuild(gap), "either"))
    # Bit flips in the data: harmless unless they make a value non-finite.
    for i in range(24):
        frac, bit = rng.random(), rng.randrange(8)

        def flip(raw, frac=frac, bit=bit):
            n = layout(raw)[2]
            size = len(raw) - 8 - n
            pos = 8 + n + int(frac * size)
            b = bytearray(raw)
            b[pos] ^= 1 << bit
            word = (pos - 8 - n) - (pos - 8 - n) % 4 + 8 + n
            value = struct.unpack("<f", bytes(b[word:word + 4]))[0]
            return bytes(b), ("either" if math.isfinite(value) else "bad")
        muts.append(("data-bitflip-%d" % i, flip, "either"))
    for i in range(10):
        frac, bit = rng.random(), rng.randrange(7)

        def hflip(raw, frac=frac, bit=bit):
            n = layout(raw)[2]
            b = bytearray(raw)
            b[8 + int(frac * n)] ^= 1 << bit
            return bytes(b)
        muts.append(("header-bitflip-%d" % i, hflip, "either"))
    return muts


def weights_special():
    """(name, setup(ctx) writing w.safetensors, kind)."""
    return [
        ("directory", lambda ctx: ctx.mkdir("w.safetensors"), "bad"),
        ("empty-file", lambda ctx: ctx.write("w.safetensors", b""), "bad"),
        ("missing", lambda ctx: None, "bad"),
        ("dev-null", lambda ctx: os.symlink("/dev/null",
                                            ctx.path("w.safetensors")), "bad"),
        ("model-B-weights", lambda ctx: ctx.copy("weightsB", "w.safetensors"),
         "bad"),
        ("model-C-weights", lambda ctx: ctx.copy("weightsC", "w.safetensors"),
         "either"),
        ("checkpoint-with-moments",
         lambda ctx: ctx.copy("ckpt.last", "w.safetensors"), "checkpoint"),
        ("gradient-file", lambda ctx: ctx.copy("grad", "w.safetensors"), "either"),
        ("config-file", lambda ctx: ctx.copy("config", "w.safetensors"), "bad"),
        ("loomx-file", lambda ctx: ctx.copy("loomx", "w.safetensors"), "bad"),
    ]


WEIGHTS_CONSUMERS = ["translate", "forward-cpu", "forward-interpreter",
                     "grad-cpu", "export", "loom-translate", "average"]


def weights_consumer_spec(consumer, kind, ctx):
    """The weights are in w.safetensors."""
    if kind == "checkpoint":
        # A checkpoint: what average reads, not what the others take.
        kind = "either" if consumer == "average" else "bad"
    expect = {"bad": BAD, "same": GOOD}.get(kind, EITHER)
    fx = ctx.fx
    if consumer == "translate":
        ctx.copy("modelA", "m")
        ctx.copy("valid.src", "in.txt")
        check = check_line_count(len(fx.valid_src))
        if kind == "same":
            check = check_same(fx.baseline["greedy"])
        return Spec(translate_argv(extra=["--weights", "w.safetensors",
                                          "--input", "in.txt", "--beam", "1"]),
                    caches=["m/translate.loomx"], expect=expect, check=check)
    if consumer == "loom-translate":
        ctx.copy("exportA", "x")
        ctx.copy("valid.src", "in.txt")
        check = check_line_count(len(fx.valid_src))
        if kind == "same":
            check = check_same(fx.baseline["greedy"])
        return Spec(["x/loom-translate", "--weights", "w.safetensors",
                     "--input", "in.txt", "--beam", "1", "--threads", "1"],
                    expect=expect, check=check)
    if consumer.startswith("forward-"):
        ctx.copy("config", "c.pbtxt")
        ctx.copy("src.ids", "s.ids")
        ctx.copy("tgt.ids", "t.ids")
        backend = consumer.split("-", 1)[1]
        check = check_forward_shape(fx.src_ids, fx.tgt_ids)
        if kind == "same":
            check = check_same(fx.baseline["forward-" + backend])
        return Spec(forward_argv(backend=backend), expect=expect, check=check)
    if consumer == "grad-cpu":
        ctx.copy("config", "c.pbtxt")
        ctx.copy("src.ids", "s.ids")
        ctx.copy("tgt.ids", "t.ids")
        return Spec(grad_argv(), outputs=["g.safetensors"], expect=expect,
                    check=check_weights_file("g.safetensors"))
    if consumer == "export":
        ctx.copy("modelA", "m")
        return Spec(["loom", "export", "--model", "m", "--weights",
                     "w.safetensors", "-o", "out"],
                    outputs=["out"], caches=["m/translate.loomx"],
                    expect=expect, check=check_file("out/model.safetensors"))
    if consumer == "average":
        # The damaged file is the newest of two checkpoints.
        ctx.mkdir("run/checkpoints")
        ctx.copy("ckpt.first", "run/checkpoints/step-1.safetensors")
        if os.path.lexists(ctx.path("w.safetensors")):
            os.rename(ctx.path("w.safetensors"),
                      ctx.path("run/checkpoints/step-2.safetensors"))
        check = check_weights_file("avg.safetensors")
        return Spec(["loom", "average", "run", "--last", "2", "-o",
                     "avg.safetensors"], outputs=["avg.safetensors"],
                    expect=EITHER if kind == "same" else expect, check=check)
    raise ValueError(consumer)


def fam_weights(seed):
    rng = random.Random("weights:%d" % seed)
    probes = []
    items = [(name, fn, kind, None) for name, fn, kind in weights_mutations(rng)]
    items += [(name, None, kind, setup) for name, setup, kind in
              weights_special()]
    for name, fn, kind, setup in items:
        consumers = ["translate"] + rng.sample(WEIGHTS_CONSUMERS[1:], 2)
        for consumer in consumers:
            def build(ctx, fn=fn, setup=setup, consumer=consumer, kind=kind):
                if fn is not None:
                    out = fn(ctx.fixture_bytes("weights"))
                    if isinstance(out, tuple):
                        out, kind = out
                    ctx.write("w.safetensors", out)
                else:
                    setup(ctx)
                spec = weights_consumer_spec(consumer, kind, ctx)
                if kind == "bad":
                    spec.expect = BAD
                elif kind == "checkpoint" and consumer != "average":
                    spec.expect = BAD
                return spec
            probes.append(Probe(
                "weights", "weights/%s/%s" % (name, consumer),
                "weights %s (%s)" % (name, kind), build,
                expect={"bad": BAD, "same": GOOD, "checkpoint":
                        EITHER if consumer == "average" else BAD}.get(kind, EITHER),
                key=(name, consumer) in {("nan-in-linear", "translate"),
                                         ("truncate-9", "translate")}))
    return probes


# --------------------------------------------------------------------------
# Family: executables (.loomx)


def loomx_mutations(rng):
    """(name, fn(raw) -> bytes, kind). kind 'bad': the file is damaged;
    'other': a whole file of another model; 'same': equivalent."""
    muts = []
    for label, at in [("0", lambda n: 0), ("1", lambda n: 1),
                      ("6", lambda n: 6), ("7", lambda n: 7),
                      ("8", lambda n: 8), ("16", lambda n: 16),
                      ("24", lambda n: 24), ("32", lambda n: 32),
                      ("64", lambda n: 64), ("100", lambda n: 100),
                      ("1000", lambda n: 1000), ("half", lambda n: n // 2),
                      ("minus-1", lambda n: n - 1)]:
        muts.append(("truncate-%s" % label,
                     lambda raw, at=at: raw[:at(len(raw))], "bad"))
    muts.append(("append-1-byte", lambda raw: raw + b"\0", "bad"))
    muts.append(("append-1MB", lambda raw: raw + b"\xab" * (1 << 20), "bad"))
    muts.append(("doubled", lambda raw: raw + raw, "bad"))
    for pos in range(0, 40, 1):
        muts.append(("header-byte-%d" % pos,
                     lambda raw, pos=pos: raw[:pos] + bytes([raw[pos] ^ 0x41])
                     + raw[pos + 1:], "bad"))
    for i in range(40):
        frac, bit = rng.random(), rng.randrange(8)
        muts.append(("bitflip-%d" % i,
                     lambda raw, frac=frac, bit=bit: (
                         lambda p: raw[:p] + bytes([raw[p] ^ (1 << bit)])
                         + raw[p + 1:])(40 + int(frac * (len(raw) - 40))),
                     "bad"))
    for i in range(6):
        frac = rng.random()
        muts.append(("zero-4KB-%d" % i,
                     lambda raw, frac=frac: (
                         lambda p: raw[:p] + b"\0" * 4096 + raw[p + 4096:])(
                         40 + int(frac * (len(raw) - 4200))), "bad"))
    muts.append(("all-zero", lambda raw: b"\0" * len(raw), "bad"))
    muts.append(("magic-only", lambda raw: raw[:7], "bad"))
    return muts


def loomx_special():
    """(name, setup(ctx, rel), kind)."""
    return [
        ("directory", lambda ctx, rel: ctx.mkdir(rel), "bad"),
        ("empty", lambda ctx, rel: ctx.write(rel, b""), "bad"),
        ("weights-file", lambda ctx, rel: ctx.copy("weights", rel), "bad"),
        ("config-file", lambda ctx, rel: ctx.copy("config", rel), "bad"),
        ("model-B-executable", lambda ctx, rel: ctx.copy("loomxB", rel), "other"),
        ("model-C-executable", lambda ctx, rel: ctx.copy("loomxC", rel), "same"),
        ("full-tiny-executable", lambda ctx, rel: ctx.copy("full.loomx", rel),
         "other"),
        ("x86-64-v2-executable", lambda ctx, rel: ctx.copy("v2.loomx", rel),
         "other"),
        ("dangling-symlink",
         lambda ctx, rel: os.symlink("nowhere.loomx", ctx.path(rel)), "bad"),
        ("dev-null", lambda ctx, rel: os.symlink("/dev/null", ctx.path(rel)),
         "bad"),
    ]


def loomx_consumer_spec(consumer, kind, ctx):
    fx = ctx.fx
    if consumer == "inspect":
        expect = GOOD if kind == "same" else (BAD if kind == "bad" else EITHER)
        return Spec(["loom", "inspect", "e.loomx"], expect=expect)
    if consumer == "translate":
        # A damaged or unusable cache is rebuilt; the translations must not
        # change.
        return Spec(translate_argv(extra=["--input", "in.txt", "--beam", "1"]),
                    caches=["m/translate.loomx"], expect=GOOD,
                    check=check_same(fx.baseline["greedy"]))
    if consumer == "loom-translate":
        expect = BAD if kind == "bad" else EITHER
        return Spec(["x/loom-translate", "--input", "in.txt", "--beam", "1",
                     "--threads", "1"], expect=expect,
                    check=check_same(fx.baseline["greedy"]))
    if consumer == "export":
        return Spec(["loom", "export", "--model", "m", "-o", "out"],
                    outputs=["out"], caches=["m/translate.loomx"],
                    expect=GOOD, check=check_export_translates("out"))
    raise ValueError(consumer)


def check_export_translates(rel):
    def check(ctx, r):
        r2 = ctx.run([rel + "/loom-translate", "--input", "in.txt", "--beam",
                      "1", "--threads", "1"])
        if r2.rc != 0:
            return "the exported folder does not translate: exit %s: %s" % (
                r2.rc, excerpt(r2.stderr, 200))
        if r2.stdout != ctx.fx.baseline["greedy"]:
            return "the exported folder translates differently: %r" % excerpt(
                r2.stdout, 200)
        return None
    return check


def fam_executable(seed):
    rng = random.Random("executable:%d" % seed)
    probes = []
    items = [(n, f, k, None) for n, f, k in loomx_mutations(rng)]
    items += [(n, None, k, s) for n, s, k in loomx_special()]
    consumers_all = ["inspect", "translate", "loom-translate", "export"]
    for name, fn, kind, setup in items:
        if name.startswith("header-byte") or name.startswith("bitflip"):
            consumers = ["loom-translate", rng.choice(["inspect", "translate"])]
        else:
            consumers = consumers_all
        for consumer in consumers:
            def build(ctx, fn=fn, setup=setup, consumer=consumer, kind=kind):
                if consumer in ("translate", "export"):
                    ctx.copy("modelA", "m")
                    rel = "m/translate.loomx"
                    os.unlink(ctx.path(rel))
                elif consumer == "loom-translate":
                    ctx.copy("exportA", "x")
                    rel = "x/translate.loomx"
                    os.unlink(ctx.path(rel))
                else:
                    rel = "e.loomx"
                ctx.copy("valid.src", "in.txt")
                if fn is not None:
                    ctx.write(rel, fn(ctx.fixture_bytes("loomx")))
                else:
                    setup(ctx, rel)
                return loomx_consumer_spec(consumer, kind, ctx)
            probes.append(Probe(
                "executable", "executable/%s/%s" % (name, consumer),
                "translate.loomx %s (%s)" % (name, kind), build,
                expect=GOOD if consumer in ("translate", "export") else
                BAD if kind == "bad" else EITHER,
                key=(name, consumer) in {("truncate-half", "loom-translate"),
                                         ("model-B-executable",
                                          "loom-translate")}))
    return probes


# --------------------------------------------------------------------------
# Family: token id files


def ids_mutations(rng):
    """(name, src-ids text or None, tgt-ids text or None, kind)."""
    good_src = "4 5 6 3\n7 8 3\n"
    good_tgt = "2 9 10 3\n2 11 3\n"
    muts = []
    for label, bad in [("vocab", "32"), ("vocab+1", "33"), ("2^31", "2147483648"),
                       ("2^32", "4294967296"), ("2^63-1", "9223372036854775807"),
                       ("2^63", "9223372036854775808"),
                       ("2^64", "18446744073709551616"),
                       ("20-digits", "99999999999999999999"),
                       ("-1", "-1"), ("-2^63", "-9223372036854775808"),
                       ("-0", "-0"), ("+5", "+5"), ("float", "5.0"),
                       ("exp", "5e0"), ("hex", "0x5"), ("octal", "010"),
                       ("word", "five"), ("unicode-digit", "\u0665"),
                       ("comma", "4,5"), ("nan", "nan"), ("inf", "inf")]:
        kind = "bad"
        if label in ("-0", "octal"):
            kind = "either"
        muts.append(("src-%s" % label, "4 %s 3\n7 8 3\n" % bad, None, kind))
        muts.append(("tgt-%s" % label, None, "2 %s 3\n2 11 3\n" % bad, kind))
    muts += [
        ("src-empty-line", "4 5 3\n\n", None, "bad"),
        ("tgt-empty-line", None, "2 9 3\n\n", "either"),
        ("both-empty-line", "\n\n", "\n\n", "bad"),
        ("src-blank-spaces", "   \n7 8 3\n", None, "bad"),
        ("src-empty-file", "", None, "bad"),
        ("tgt-empty-file", None, "", "bad"),
        ("src-only-newline", "\n", None, "bad"),
        ("src-more-lines", good_src + "4 3\n", None, "bad"),
        ("tgt-more-lines", None, good_tgt + "2 3\n", "bad"),
        ("tgt-one-token", None, "2\n2\n", "either"),
        ("tgt-all-padding", None, "0 0 0\n0 0\n", "either"),
        ("src-all-padding", "0 0 0\n0 0\n", None, "either"),
        ("src-max-len", " ".join(["5"] * 256) + "\n7 3\n", None, "either"),
        ("src-max-len+1", " ".join(["5"] * 257) + "\n7 3\n", None, "bad"),
        ("src-100000-ids", " ".join(["5"] * 100000) + "\n7 3\n", None, "bad"),
        ("src-1MB-token", "4" * (1 << 20) + "\n7 3\n", None, "bad"),
        ("tgt-max-len+1", None, " ".join(["5"] * 257) + "\n2 3\n", "bad"),
        ("crlf", good_src.replace("\n", "\r\n"), good_tgt.replace("\n", "\r\n"),
         "same"),
        ("cr-only", good_src.replace("\n", "\r"), good_tgt.replace("\n", "\r"),
         "either"),
        ("tabs", good_src.replace(" ", "\t"), good_tgt.replace(" ", "\t"), "same"),
        ("many-spaces", good_src.replace(" ", "   "), None, "same"),
        ("no-final-newline", good_src[:-1], good_tgt[:-1], "same"),
        ("nul-byte", "4 5\x006 3\n7 8 3\n", None, "bad"),
        ("invalid-utf8", "4 5 6 3\n7 \xff 3\n", None, "bad"),
        ("utf8-bom", "\ufeff" + good_src, None, "bad"),
        ("vertical-tab", "4\x0b5 6 3\n7 8 3\n", None, "either"),
        ("nbsp", "4\u00a05 6 3\n7 8 3\n", None, "bad"),
        ("10000-lines", "4 3\n" * 10000, "2 5 3\n" * 10000, "either"),
    ]
    return muts


IDS_CONSUMERS = ["forward-cpu", "forward-interpreter", "grad-cpu",
                 "grad-interpreter"]


def fam_ids(seed):
    rng = random.Random("ids:%d" % seed)
    probes = []
    for name, src, tgt, kind in ids_mutations(rng):
        consumers = rng.sample(IDS_CONSUMERS, 2)
        if name.startswith("src-2^") or name == "src--1":
            consumers = IDS_CONSUMERS
        for consumer in consumers:
            def build(ctx, src=src, tgt=tgt, consumer=consumer, kind=kind):
                ctx.copy("config", "c.pbtxt")
                ctx.copy("weights", "w.safetensors")
                good_src, good_tgt = "4 5 6 3\n7 8 3\n", "2 9 10 3\n2 11 3\n"
                enc = lambda t: t.encode("utf-8", "surrogateescape") \
                    if "\xff" not in t else t.encode("latin-1")
                ctx.write("s.ids", enc(src if src is not None else good_src))
                ctx.write("t.ids", enc(tgt if tgt is not None else good_tgt))
                backend = consumer.split("-", 1)[1]
                expect = {"bad": BAD, "same": GOOD}.get(kind, EITHER)
                if consumer.startswith("forward"):
                    check = None
                    if kind == "same":
                        check = check_forward_values(
                            [[4, 5, 6, 3], [7, 8, 3]], [[2, 9, 10, 3], [2, 11, 3]])
                    return Spec(forward_argv(backend=backend), expect=expect,
                                check=check)
                return Spec(grad_argv(backend=backend), expect=expect,
                            outputs=["g.safetensors"],
                            check=check_weights_file("g.safetensors"))
            probes.append(Probe("ids", "ids/%s/%s" % (name, consumer),
                                "token ids: %s (%s)" % (name, kind), build,
                                expect={"bad": BAD, "same": GOOD}.get(kind, EITHER)))
    # Files that are not files; outputs that are inputs.
    for name, setup, argv, kind, outputs in [
            ("src-directory", lambda ctx: (shutil.rmtree(ctx.path("s.ids"))
                                           if False else (os.unlink(ctx.path("s.ids")),
                                                          ctx.mkdir("s.ids"))),
             forward_argv(), "bad", []),
            ("src-missing", lambda ctx: os.unlink(ctx.path("s.ids")),
             forward_argv(), "bad", []),
            ("src-dev-null", lambda ctx: (os.unlink(ctx.path("s.ids")),
                                          os.symlink("/dev/null", ctx.path("s.ids"))),
             forward_argv(), "bad", []),
            ("src-is-tgt", lambda ctx: None,
             forward_argv(src="t.ids"), "either", []),
            ("grad-out-is-weights", lambda ctx: None,
             grad_argv(out="w.safetensors"), "bad", []),
            ("grad-out-is-src-ids", lambda ctx: None,
             grad_argv(out="s.ids"), "bad", []),
            ("grad-out-is-config", lambda ctx: None,
             grad_argv(out="c.pbtxt"), "bad", []),
            ("grad-out-directory", lambda ctx: ctx.mkdir("gdir"),
             grad_argv(out="gdir"), "bad", []),
            ("grad-out-missing-dir", lambda ctx: None,
             grad_argv(out="nope/deeper/g.safetensors"), "bad", []),
            ("grad-out-empty", lambda ctx: None, grad_argv(out=""), "bad", []),
            ("grad-out-under-file", lambda ctx: None,
             grad_argv(out="s.ids/g.safetensors"), "bad", []),
            ("grad-out-existing", lambda ctx: ctx.write("g.safetensors", b"old"),
             grad_argv(), "good", ["g.safetensors"]),
            ("grad-interp-out-is-weights", lambda ctx: None,
             grad_argv(out="w.safetensors", backend="interpreter"), "bad", []),
    ]:
        def build(ctx, setup=setup, argv=argv, kind=kind, outputs=outputs):
            setup_forward(ctx)
            setup(ctx)
            expect = {"bad": BAD, "good": GOOD}.get(kind, EITHER)
            check = None
            if argv[1] == "grad" and outputs:
                check = check_weights_file(outputs[0])
            return Spec(argv, expect=expect, outputs=outputs, check=check)
        probes.append(Probe("ids", "ids/%s" % name, "token ids: %s" % name,
                            build, expect={"bad": BAD, "good": GOOD}.get(kind, EITHER),
                            key=name == "grad-out-is-weights"))
    return probes


def check_forward_values(src, tgt):
    """The output of the two-pair batch must hold log-probabilities."""
    return check_forward_shape(src, tgt)


# --------------------------------------------------------------------------
# Family: text for translate, loom-translate and score


def text_inputs(rng, valid):
    """(name, bytes, expected translations per line (None: any) or None
    when the count is all that can be checked, kind)."""
    g = valid[:6]
    out = []

    def lines(parts):
        return ("".join(p + "\n" for p in parts)).encode()

    out.append(("plain", lines(g), [("src", s) for s in g], "same"))
    out.append(("empty-input", b"", [], "same"))
    out.append(("one-empty-line", b"\n", [("empty", "")], "same"))
    out.append(("empty-lines-between",
                lines([g[0], "", g[1], "", "", g[2]]),
                [("src", g[0]), ("empty", ""), ("src", g[1]), ("empty", ""),
                 ("empty", ""), ("src", g[2])], "same"))
    out.append(("whitespace-only-lines",
                lines([g[0], "   ", "\t", g[1], " \t \u00a0 "]),
                [("src", g[0]), ("empty", ""), ("empty", ""), ("src", g[1]),
                 ("any", None)], "same"))
    out.append(("crlf", lines(g).replace(b"\n", b"\r\n"),
                [("src", s) for s in g], "same"))
    out.append(("cr-only", lines(g).replace(b"\n", b"\r"),
                [("src", s) for s in g], "either-count"))
    out.append(("mixed-endings", (g[0] + "\r\n" + g[1] + "\n" + g[2] + "\r\n")
                .encode(), [("src", s) for s in g[:3]], "same"))
    out.append(("no-final-newline", lines(g)[:-1], [("src", s) for s in g],
                "same"))
    out.append(("leading-trailing-spaces", lines(["  " + s + "  " for s in g]),
                [("any", None)] * len(g), "same"))
    for size in (4097, 100000):
        long = " ".join([g[0]] * (size // (len(g[0]) + 1) + 1))[:size]
        out.append(("line-%d-bytes" % size, lines([g[1], long, g[2]]),
                    [("src", g[1]), ("any", None), ("src", g[2])], "same"))
    out.append(("one-word-100000-bytes", lines([g[1], "a" * 100000]),
                [("src", g[1]), ("any", None)], "same"))
    out.append(("1000-lines", lines([g[i % len(g)] for i in range(1000)]),
                [("src", g[i % len(g)]) for i in range(1000)], "same"))
    for label, raw in [("0xff", b"\xff"), ("lone-continuation", b"\x80"),
                       ("overlong-slash", b"\xc0\xaf"),
                       ("surrogate", b"\xed\xa0\x80"),
                       ("truncated-3-byte", b"\xe2\x82"),
                       ("above-u10ffff", b"\xf4\x90\x80\x80"),
                       ("latin1-word", b"caf\xe9")]:
        out.append(("invalid-utf8-%s" % label,
                    lines([g[0]]) + raw + b" " + lines([g[1]]), None, "bad"))
    out.append(("invalid-utf8-at-eof", lines([g[0]]) + b"\xe2\x82", None, "bad"))
    out.append(("nul-byte", lines([g[0]]) + b"alpha\0bravo\n" + lines([g[1]]),
                [("src", g[0]), ("any", None), ("src", g[1])], "either-count"))
    out.append(("only-nul", b"\0\n", [("any", None)], "either-count"))
    out.append(("utf8-bom", b"\xef\xbb\xbf" + lines(g),
                [("any", None)] + [("src", s) for s in g[1:]], "either-count"))
    out.append(("control-chars", lines([g[0], "alpha\x01\x02\x1b[31m bravo",
                                        g[1]]),
                [("src", g[0]), ("any", None), ("src", g[1])], "same"))
    out.append(("emoji-and-rtl", lines([g[0], "alpha \U0001F600 \u05e9\u05dc\u05d5\u05dd "
                                        "e\u0301\u0301\u0301", g[1]]),
                [("src", g[0]), ("any", None), ("src", g[1])], "same"))
    out.append(("unknown-words", lines(["zzz qqq xxx", g[0]]),
                [("any", None), ("src", g[0])], "same"))
    out.append(("form-feed-vertical-tab", lines(["alpha\x0cbravo\x0bdelta", g[0]]),
                [("any", None), ("src", g[0])], "same"))
    out.append(("unicode-line-separator", lines(["alpha\u2028bravo", g[0]]),
                [("any", None), ("src", g[0])], "either-count"))
    out.append(("10000-empty-lines", b"\n" * 10000, [("empty", "")] * 10000,
                "same"))
    return out


def translations_check(fx, expected, nbest=1):
    want = []
    for what, s in expected:
        for _ in range(nbest):
            if what == "src":
                want.append(fx.greedy_of.get(s))
            elif what == "empty":
                want.append("")
            else:
                want.append(None)
    return check_translations(want)


TEXT_CONSUMERS = ["translate-stdin", "translate-input", "loom-translate",
                  "score-hyp", "score-ref"]


def fam_text(seed):
    rng = random.Random("text:%d" % seed)
    probes = []
    valid = make_corpus_lines(20, 2)
    for name, data, expected, kind in text_inputs(rng, valid):
        for consumer in TEXT_CONSUMERS:
            if consumer.startswith("score") and name in ("1000-lines",
                                                         "10000-empty-lines"):
                continue

            def build(ctx, data=data, expected=expected, kind=kind,
                      consumer=consumer):
                fx = ctx.fx
                ctx.write("in.txt", data)
                expect = BAD if kind == "bad" else EITHER
                if kind == "same":
                    expect = GOOD
                if consumer.startswith("score"):
                    return score_spec(ctx, consumer, data, kind)
                check = None
                if expected is not None:
                    if kind == "either-count":
                        check = check_line_count(len(expected))
                    else:
                        check = translations_check(fx, expected)
                stdin = b""
                if consumer == "translate-stdin":
                    ctx.copy("modelA", "m")
                    argv = translate_argv(extra=["--beam", "1"])
                    stdin = data
                elif consumer == "translate-input":
                    ctx.copy("modelA", "m")
                    argv = translate_argv(extra=["--beam", "1", "--input",
                                                 "in.txt"])
                else:
                    ctx.copy("exportA", "x")
                    argv = ["x/loom-translate", "--beam", "1", "--threads", "1",
                            "--input", "in.txt"]
                return Spec(argv, stdin=stdin, expect=expect, check=check,
                            caches=["m/translate.loomx"])
            probes.append(Probe(
                "text", "text/%s/%s" % (name, consumer),
                "text input %s (%s)" % (name, kind), build,
                expect=BAD if kind == "bad" else (GOOD if kind == "same"
                                                  else EITHER)))
    # Paths instead of text.
    for name, setup, argv, kind in [
            ("input-directory", lambda ctx: ctx.mkdir("d"),
             translate_argv(extra=["--input", "d"]), "bad"),
            ("input-missing", lambda ctx: None,
             translate_argv(extra=["--input", "nope.txt"]), "bad"),
            ("input-dev-null", lambda ctx: None,
             translate_argv(extra=["--input", "/dev/null"]), "good"),
            ("input-empty-string", lambda ctx: None,
             translate_argv(extra=["--input", ""]), "either"),
            ("loom-translate-input-directory", lambda ctx: ctx.mkdir("d"),
             ["x/loom-translate", "--input", "d"], "bad"),
            ("score-ref-directory", lambda ctx: ctx.mkdir("d"),
             ["loom", "score", "--ref", "d", "--input", "ref.txt"], "bad"),
            ("score-input-directory", lambda ctx: ctx.mkdir("d"),
             ["loom", "score", "--ref", "ref.txt", "--input", "d"], "bad"),
            ("score-ref-empty-file", lambda ctx: ctx.write("e.txt", b""),
             ["loom", "score", "--ref", "e.txt", "--input", "e.txt"], "either"),
            ("score-ref-dev-null", lambda ctx: None,
             ["loom", "score", "--ref", "/dev/null", "--input", "/dev/null"],
             "either"),
    ]:
        def build(ctx, setup=setup, argv=argv, kind=kind):
            ctx.copy("modelA", "m")
            ctx.copy("exportA", "x")
            ctx.copy("valid.tgt", "ref.txt")
            setup(ctx)
            return Spec(argv, expect={"bad": BAD, "good": GOOD}.get(kind, EITHER),
                        caches=["m/translate.loomx"])
        probes.append(Probe("text", "text/%s" % name, name, build,
                            expect={"bad": BAD, "good": GOOD}.get(kind, EITHER)))
    return probes


def make_corpus_lines(lines, seed):
    rng = random.Random(seed)
    src = []
    for _ in range(lines):
        words = [rng.randrange(len(SRC_WORDS)) for _ in range(rng.randint(2, 6))]
        src.append(" ".join(SRC_WORDS[w] for w in words))
    return src


def check_bleu(expected=None):
    def check(ctx, r):
        m = re.search(r"BLEU = ([0-9.]+|nan|inf|-nan)", r.stdout.decode("utf-8",
                                                                        "replace"))
        if not m:
            return "no 'BLEU =' line: %r" % excerpt(r.stdout, 200)
        try:
            v = float(m.group(1))
        except ValueError:
            return "BLEU is %s" % m.group(1)
        if not (0 <= v <= 100):
            return "BLEU is %s" % m.group(1)
        if expected is not None and abs(v - expected) > 0.005:
            return "BLEU is %s, expected %.2f" % (m.group(1), expected)
        return None
    return check


def score_spec(ctx, consumer, data, kind):
    """The text as hypotheses against itself (LF-normalized) or as the
    reference of its own LF-normalized copy."""
    norm = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if not norm.endswith(b"\n") and norm:
        norm += b"\n"
    ctx.write("norm.txt", norm)
    if consumer == "score-hyp":
        argv = ["loom", "score", "--ref", "norm.txt", "--input", "in.txt"]
    else:
        argv = ["loom", "score", "--ref", "in.txt", "--input", "norm.txt"]
    text_lines = lines_of(norm)
    has_empty = any(not l.strip() for l in text_lines)
    expect = EITHER
    if kind == "bad":
        expect = BAD
    elif kind == "same" and text_lines and not has_empty:
        expect = GOOD
    return Spec(argv, expect=expect, check=check_bleu_as("norm.txt"))


def check_bleu_as(rel):
    """The score must be a BLEU in [0, 100] and equal to that of `rel`
    scored against itself (the same text with LF line ends)."""
    def check(ctx, r):
        problem = check_bleu()(ctx, r)
        if problem:
            return problem
        r2 = ctx.run(["loom", "score", "--ref", rel, "--input", rel])
        if r2.rc != 0:
            return None
        got = r.stdout.decode("utf-8", "replace").split("\n")[0]
        want = r2.stdout.decode("utf-8", "replace").split("\n")[0]
        if got != want:
            return "%r, but the same text with LF line ends scores %r" % (
                got, want)
        return None
    return check


# --------------------------------------------------------------------------
# Family: train

TRAIN_OUTPUT_NAMES = ["spm.model", "config.pbtxt", "checkpoints",
                      "metrics.jsonl", "model.safetensors", "translate.loomx"]


def corpus_variants():
    """(name, fn(src lines, tgt lines) -> (src bytes, tgt bytes), kind)."""
    def j(lines):
        return ("".join(l + "\n" for l in lines)).encode()

    def v(fn):
        return lambda s, t: fn(list(s), list(t))

    out = [
        ("mismatched-by-1", v(lambda s, t: (j(s), j(t[:-1]))), "bad"),
        ("mismatched-many", v(lambda s, t: (j(s), j(t[:10]))), "bad"),
        ("src-empty-file", v(lambda s, t: (b"", j(t))), "bad"),
        ("tgt-empty-file", v(lambda s, t: (j(s), b"")), "bad"),
        ("both-empty", v(lambda s, t: (b"", b"")), "bad"),
        ("all-blank", v(lambda s, t: (b"\n" * len(s), j(t))), "bad"),
        ("whitespace-lines", v(lambda s, t: (j(["  "] * len(s)), j(t))), "bad"),
        ("crlf", v(lambda s, t: (j(s).replace(b"\n", b"\r\n"),
                                 j(t).replace(b"\n", b"\r\n"))), "either"),
        ("cr-only", v(lambda s, t: (j(s).replace(b"\n", b"\r"),
                                    j(t).replace(b"\n", b"\r"))), "either"),
        ("cr-only-300-lines", v(lambda s, t: (j(s * 5).replace(b"\n", b"\r"),
                                              j(t * 5).replace(b"\n", b"\r"))),
         "either"),
        ("cr-only-src", v(lambda s, t: (j(s).replace(b"\n", b"\r"), j(t))),
         "either"),
        ("invalid-utf8", v(lambda s, t: (j(s[:3]) + b"caf\xe9\n" + j(s[4:]),
                                         j(t))), "bad"),
        ("nul-byte", v(lambda s, t: (j(s[:3]) + b"alpha\0bravo\n" + j(s[4:]),
                                     j(t))), "either"),
        ("utf8-bom", v(lambda s, t: (b"\xef\xbb\xbf" + j(s), j(t))), "either"),
        ("no-final-newline", v(lambda s, t: (j(s)[:-1], j(t)[:-1])), "either"),
        ("one-pair", v(lambda s, t: (j(s[:1]), j(t[:1]))), "either"),
        ("same-file-both-sides", v(lambda s, t: (j(s), j(s))), "either"),
        ("emoji-lines", v(lambda s, t: (j([x + " \U0001F600" for x in s]), j(t))),
         "either"),
    ]
    for side in ("src", "tgt"):
        for size, spaces in [(4096, True), (4097, True), (5000, False),
                             (100000, True), (100000, False)]:
            def fn(s, t, size=size, spaces=spaces, side=side):
                word = "alpha " if spaces else "a"
                line = (word * (size // len(word) + 1))[:size]
                if side == "src":
                    s = s[:5] + [line] + s[6:]
                else:
                    t = t[:5] + [line] + t[6:]
                return j(s), j(t)
            out.append(("%s-line-%d%s" % (side, size, "" if spaces else "-nospace"),
                        v(fn), "either"))
    return out


def fam_train(seed):
    probes = []

    def add(name, desc, build, expect, key=False, alone=False):
        p = Probe("train", "train/" + name, desc, build, expect=expect,
                  slow=True, key=key)
        p.alone = alone
        probes.append(p)

    for name, fn, kind in corpus_variants():
        def build(ctx, fn=fn, kind=kind):
            s = ctx.fixture_bytes("train.src").decode().split("\n")[:60]
            t = ctx.fixture_bytes("train.tgt").decode().split("\n")[:60]
            src, tgt = fn(s, t)
            ctx.write("tr.src", src)
            ctx.write("tr.tgt", tgt)
            return Spec(train_argv(), outputs=["run"],
                        expect=BAD if kind == "bad" else EITHER,
                        check=check_model_dir("run"))
        add("corpus-" + name, "train corpus: %s" % name, build,
            BAD if kind == "bad" else EITHER,
            key=name in ("src-line-5000-nospace", "cr-only-300-lines",
                          "mismatched-by-1"))
    for name, setup, argv, kind in [
            ("src-missing", lambda ctx: os.unlink(ctx.path("tr.src")),
             train_argv(), "bad"),
            ("src-directory", lambda ctx: (os.unlink(ctx.path("tr.src")),
                                           ctx.mkdir("tr.src")), train_argv(), "bad"),
            ("src-dev-null", lambda ctx: None, train_argv(src="/dev/null"), "bad"),
            ("valid-mismatched", lambda ctx: ctx.write("va.tgt", b"ah\n"),
             train_argv(extra=["--valid", "tr.src", "va.tgt"]), "bad"),
            ("valid-missing", lambda ctx: None,
             train_argv(extra=["--valid", "nope.src", "nope.tgt"]), "bad"),
            ("valid-empty", lambda ctx: (ctx.write("va.src", b""),
                                         ctx.write("va.tgt", b"")),
             train_argv(extra=["--valid", "va.src", "va.tgt"]), "bad"),
            ("valid-invalid-utf8", lambda ctx: (ctx.write("va.src", b"caf\xe9\n"),
                                                ctx.write("va.tgt", b"ah\n")),
             train_argv(extra=["--valid", "va.src", "va.tgt"]), "bad"),
            ("valid-is-train", lambda ctx: None,
             train_argv(extra=["--valid", "tr.src", "tr.tgt"]), "good"),
    ]:
        def build(ctx, setup=setup, argv=argv, kind=kind):
            setup_train(ctx)
            setup(ctx)
            return Spec(argv, outputs=["run"],
                        expect={"bad": BAD, "good": GOOD}.get(kind, EITHER),
                        check=check_model_dir("run"))
        add(name, "train: %s" % name, build,
            {"bad": BAD, "good": GOOD}.get(kind, EITHER))

    # Where the run goes.
    def out_probe(name, setup, out, kind, outputs, key=False, alone=False,
                  corpus_ok=True):
        def build(ctx):
            setup_train(ctx)
            if not corpus_ok:
                # One line short: found only after the vocabulary is trained.
                lines = ctx.read("tr.tgt").split(b"\n")
                ctx.write("tr.tgt", b"\n".join(lines[:-2]) + b"\n")
            setup(ctx)
            return Spec(train_argv(out=out), outputs=outputs,
                        caches=[out + "/translate.loomx"] if out else [],
                        expect={"bad": BAD, "good": GOOD}.get(kind, EITHER),
                        check=check_model_dir(out) if out else None,
                        watch_root=alone)
        add(name, "train --out %r: %s" % (out, name), build,
            {"bad": BAD, "good": GOOD}.get(kind, EITHER), key=key, alone=alone)

    nothing = lambda ctx: None  # noqa: E731
    out_probe("out-empty-string", nothing, "", "bad", [], key=True, alone=True)
    out_probe("out-is-src-file", nothing, "tr.src", "bad", [])
    out_probe("out-is-other-file", lambda ctx: ctx.write("f", b"keep me"), "f",
              "bad", [])
    out_probe("out-under-file", nothing, "tr.src/run", "bad", [])
    out_probe("out-nested-new", nothing, "a/b/c", "good", ["a"])
    out_probe("out-dot", nothing, ".", "either",
              ["./" + n for n in TRAIN_OUTPUT_NAMES] + TRAIN_OUTPUT_NAMES)
    if unwritable_dir():
        out_probe("out-unwritable", nothing, unwritable_dir() + "/run", "bad", [])
    out_probe("existing-model-dir-failing",
              lambda ctx: ctx.copy("modelA-nockpt", "m"), "m", "bad", ["m"],
              key=True, corpus_ok=False)
    out_probe("existing-model-dir-ok",
              lambda ctx: ctx.copy("modelA-nockpt", "m"), "m", "either", ["m"])
    out_probe("existing-run-with-checkpoints",
              lambda ctx: ctx.copy("modelA", "m"), "m", "bad", ["m"])
    out_probe("out-holds-user-files-failing",
              lambda ctx: ctx.write("m/notes.txt", b"mine"), "m", "bad",
              ["m/spm.model", "m/config.pbtxt", "m/checkpoints",
               "m/metrics.jsonl", "m/model.safetensors", "m/translate.loomx"],
              corpus_ok=False)
    out_probe("out-spm-model-is-directory",
              lambda ctx: ctx.mkdir("m/spm.model"), "m", "bad", ["m"])

    # --resume.
    def resume_probe(name, mutate, kind, extra=(), key=False, corpus="train"):
        def build(ctx):
            ctx.copy("modelA", "m")
            ctx.copy(corpus + ".src", "tr.src")
            ctx.copy(corpus + ".tgt", "tr.tgt")
            mutate(ctx)
            argv = ["loom", "train", "--resume", "--train", "tr.src", "tr.tgt",
                    "--out", "m", "--steps", "402", "--log-every", "1",
                    "--threads", "1", "--progress", "lines"] + list(extra)
            return Spec(argv, outputs=["m"], caches=["m/translate.loomx"],
                        expect={"bad": BAD, "good": GOOD}.get(kind, EITHER),
                        check=check_model_dir("m"))
        add("resume-" + name, "train --resume: %s" % name, build,
            {"bad": BAD, "good": GOOD}.get(kind, EITHER), key=key)

    def edit_config(field, value):
        def fn(ctx):
            text = ctx.read("m/config.pbtxt").decode()
            ctx.write("m/config.pbtxt", set_field(text, field, value))
        return fn

    def latest(ctx):
        d = ctx.path("m/checkpoints")
        names = sorted(os.listdir(d), key=lambda n: int(re.sub(r"\D", "", n)))
        return "m/checkpoints/" + names[-1]

    resume_probe("ok", nothing, "good")
    resume_probe("changed-config-d_ff", edit_config("d_ff", "128"), "bad", key=True)
    resume_probe("changed-config-heads", edit_config("heads", "4"), "bad")
    resume_probe("changed-config-norm", edit_config("norm", "PRE"), "bad")
    resume_probe("changed-config-max_len", edit_config("max_len", "16"), "bad")
    resume_probe("changed-config-dropout", edit_config("dropout", "0.3"), "bad")
    resume_probe("changed-corpus", nothing, "bad", key=True, corpus="trainc")
    resume_probe("changed-corpus-one-line",
                 lambda ctx: ctx.write("tr.src", b"kilo lima\n" +
                                       b"\n".join(ctx.read("tr.src")
                                                  .split(b"\n")[1:])), "bad")
    resume_probe("changed-spm", lambda ctx: ctx.copy("spmC", "m/spm.model"), "bad")
    resume_probe("truncated-latest",
                 lambda ctx: ctx.write(latest(ctx), ctx.read(latest(ctx))[:1000]),
                 "bad")
    resume_probe("nan-in-latest", lambda ctx: ctx.write(
        latest(ctx), nan_first_value(ctx.read(latest(ctx)))), "bad")
    resume_probe("model-B-checkpoint-latest", lambda ctx: shutil.copyfile(
        os.path.join(ctx.fx.paths["modelB"], "checkpoints",
                     sorted(os.listdir(os.path.join(ctx.fx.paths["modelB"],
                                                    "checkpoints")))[-1]),
        ctx.path("m/checkpoints/step-999.safetensors")), "bad")
    resume_probe("no-checkpoints", lambda ctx: shutil.rmtree(
        ctx.path("m/checkpoints")), "bad")
    resume_probe("checkpoints-is-file", lambda ctx: (
        shutil.rmtree(ctx.path("m/checkpoints")),
        ctx.write("m/checkpoints", b"x")), "bad")
    resume_probe("missing-config", lambda ctx: os.unlink(
        ctx.path("m/config.pbtxt")), "bad")
    resume_probe("missing-spm", lambda ctx: os.unlink(ctx.path("m/spm.model")),
                 "bad")
    resume_probe("with-preset", nothing, "bad", extra=["--preset", "tiny"])
    resume_probe("changed-max-tokens", nothing, "bad",
                 extra=["--max-tokens", "512"])
    resume_probe("changed-seed", nothing, "bad", extra=["--seed", "9"])
    resume_probe("steps-below-done", nothing, "either", extra=["--steps", "10"])
    resume_probe("changed-vocab-size", nothing, "bad", extra=["--vocab-size", "20"])

    # Option values.
    for opt, values in [
            ("--max-tokens", [("0", "bad"), ("15", "bad"), ("16", "bad"),
                              ("-1", "bad"), ("4611686018427387904", "either"),
                              ("x", "bad")]),
            ("--max-sentences", [("0", "bad"), ("-1", "bad"),
                                 ("4611686018427387904", "either")]),
            ("--steps", [("-1", "bad"), ("0", "bad"), ("x", "bad")]),
            ("--epochs", [("-1", "bad"), ("nan", "bad")]),
            ("--warmup", [("0", "bad"), ("-1", "bad"),
                          ("4611686018427387904", "either")]),
            ("--lr-scale", [("nan", "bad"), ("inf", "bad"), ("-1", "bad"),
                            ("0", "bad"), ("1e300", "bad"), ("1e-300", "either")]),
            ("--clip-norm", [("nan", "bad"), ("inf", "bad"), ("-1", "bad"),
                             ("1e-30", "either")]),
            ("--valid-every", [("-1", "bad"), ("4611686018427387904", "either")]),
            ("--log-every", [("0", "bad"), ("-1", "bad"),
                             ("4611686018427387904", "either")]),
            ("--keep", [("0", "bad"), ("-1", "bad"),
                        ("4611686018427387904", "either")]),
            ("--vocab-size", [("1", "bad"), ("3", "bad"), ("4", "bad"),
                              ("5", "either"), ("-1", "bad"),
                              ("2147483648", "bad"), ("4294967328", "bad"),
                              ("100000", "bad"), ("40", "either")]),
            ("--seed", [("-1", "bad"), ("18446744073709551616", "bad"),
                        ("18446744073709551615", "either")]),
            ("--threads", [("-1", "bad"), ("2147483648", "bad"),
                           ("100000", "either")]),
            ("--progress", [("", "bad"), ("bogus", "bad"), ("bar", "either")]),
            # Read outside a job too: a bad value is refused either way.
            ("--comm-timeout", [("0", "bad"), ("-1", "bad"), ("nan", "bad"),
                                ("inf", "bad"), ("1e300", "bad"),
                                ("0.001", "either")]),
            ("--bucket-mb", [("0", "bad"), ("-1", "bad"), ("nan", "bad"),
                             ("inf", "bad"), ("1e-9", "bad"),
                             ("2000000", "bad"), ("0.5", "either")]),
    ]:
        for value, kind in values:
            def build(ctx, opt=opt, value=value, kind=kind):
                setup_train(ctx)
                argv = train_argv()
                drop = "--steps" if opt == "--epochs" else opt
                if drop in argv:
                    i = argv.index(drop)
                    del argv[i:i + 2]
                argv += [opt, value]
                return Spec(argv, outputs=["run"],
                            expect=BAD if kind == "bad" else EITHER,
                            check=check_model_dir("run"))
            add("option%s=%s" % (opt, value or "''"),
                "train %s %r (%s)" % (opt, value, kind), build,
                BAD if kind == "bad" else EITHER)
    return probes


def nan_first_value(raw):
    h, d = st_read(raw)
    name = st_tensor_names(h)[1]
    b = h[name]["data_offsets"][0]
    d = bytearray(d)
    d[b:b + 4] = struct.pack("<f", float("nan"))
    return st_build(h, bytes(d))


# --------------------------------------------------------------------------
# Family: command-line values

INT_VALUES = [("-1", "neg"), ("0", "zero"), ("9223372036854775807", "huge"),
              ("18446744073709551616", "overflow"), ("2147483648", "2^31"),
              ("nan", "word"), ("inf", "word"), ("", "word"), ("1.5", "word"),
              ("x", "word"), (" 1", "alt"), ("0x10", "alt")]
FLOAT_VALUES = [("nan", "nan"), ("inf", "inf"), ("-inf", "-inf"),
                ("-1", "neg"), ("0", "zero"), ("1e308", "huge"),
                ("1e400", "overflow"), ("1e-320", "tiny"), ("", "word"),
                ("x", "word"), ("1,5", "word")]


def int_expect(label, zero_ok=False, huge_ok=True):
    if label == "alt":
        return EITHER
    if label == "neg":
        return BAD
    if label == "zero":
        return EITHER if zero_ok else BAD
    if label in ("huge", "2^31"):
        return EITHER if huge_ok else BAD
    return BAD


def fam_cli(seed):
    probes = []

    def add(name, desc, build, expect, key=False, alone=False, slow=False):
        slow = slow or "100000" in name or "18446744073709551616" in name
        p = Probe("cli", "cli/" + name, desc, build, expect=expect, key=key,
                  slow=slow)
        p.alone = alone
        probes.append(p)

    six = make_corpus_lines(20, 2)[:6]
    six_bytes = ("".join(s + "\n" for s in six)).encode()

    # translate and loom-translate numeric options.
    for tool in ("translate", "loom-translate"):
        def base(ctx, tool=tool):
            ctx.write("in.txt", six_bytes)
            if tool == "translate":
                ctx.copy("modelA", "m")
                return translate_argv(extra=["--input", "in.txt"])
            ctx.copy("exportA", "x")
            return ["x/loom-translate", "--input", "in.txt", "--threads", "1"]

        def count(nbest=1):
            return check_line_count(6 * nbest)

        for opt, values in [
                ("--beam", [(v, int_expect(l, huge_ok=False)) for v, l in INT_VALUES]
                 + [("129", BAD), ("128", EITHER), ("2", GOOD)]),
                ("--nbest", [(v, int_expect(l, huge_ok=False)) for v, l in INT_VALUES]
                 + [("5", BAD), ("4", GOOD)]),
                ("--batch", [(v, int_expect(l)) for v, l in INT_VALUES]
                 + [("1", GOOD)]),
                ("--threads", [(v, int_expect(l, zero_ok=True, huge_ok=False))
                               for v, l in INT_VALUES if l != "huge"]
                 + [("100000", EITHER), ("1", GOOD)]),
                ("--alpha", [(v, {"zero": GOOD, "huge": EITHER, "tiny": GOOD}
                              .get(l, BAD)) for v, l in FLOAT_VALUES]),
                ("--max-len-ratio",
                 [(v, {"inf": EITHER, "huge": EITHER, "tiny": EITHER}.get(l, BAD))
                  for v, l in FLOAT_VALUES] + [("1e19", EITHER), ("1e-9", EITHER)]),
        ]:
            for value, expect in values:
                def build(ctx, base=base, opt=opt, value=value, expect=expect,
                          tool=tool):
                    argv = base(ctx)
                    if opt == "--threads":
                        i = argv.index("--threads")
                        del argv[i:i + 2]
                    if opt not in ("--beam", "--nbest", "--alpha"):
                        argv += ["--beam", "1"]
                    if opt in ("--nbest", "--alpha"):
                        argv += ["--beam", "4"]
                    argv += [opt, value]
                    nbest = 1
                    if opt == "--nbest":
                        try:
                            nbest = int(value)
                        except ValueError:
                            nbest = 1
                    check = count(nbest)
                    if opt == "--max-len-ratio" and value in ("inf", "1e308",
                                                              "1e19"):
                        check = check_same(ctx.fx.long_ratio_six,
                                           "the translation")
                    if opt in ("--batch", "--threads", "--alpha") and \
                            expect != BAD and opt != "--alpha":
                        check = check_same(ctx.fx.baseline_for_six, "the output")
                    return Spec(argv, expect=expect, check=check,
                                caches=["m/translate.loomx"])
                add("%s/%s=%s" % (tool, opt, value or "''"),
                    "%s %s %r" % (tool, opt, value), build, expect,
                    key=(tool, opt, value) in {("translate", "--max-len-ratio",
                                                "inf")})
        # Paths.
        for opt, value, setup, expect, alone in [
                ("--input", "", None, EITHER, False),
                ("--input", "d", "dir", BAD, False),
                ("--input", "nope", None, BAD, False),
                ("--weights", "", None, EITHER, False),
                ("--weights", "d", "dir", BAD, False),
                ("--weights", "nope", None, BAD, False),
                ("--weights", "in.txt", None, BAD, False),
        ]:
            def build(ctx, base=base, opt=opt, value=value, setup=setup,
                      expect=expect):
                argv = base(ctx)
                if setup == "dir":
                    ctx.mkdir("d")
                if opt == "--input":
                    i = argv.index("--input")
                    del argv[i:i + 2]
                return Spec(argv + ["--beam", "1", opt, value], expect=expect,
                            caches=["m/translate.loomx"],
                            stdin=six_bytes)
            add("%s/%s=%s" % (tool, opt, value or "''"),
                "%s %s %r" % (tool, opt, value), build, expect)
    for value, setup, expect, alone in [
            ("", None, EITHER, True), (".", None, BAD, False),
            ("nope", None, BAD, False), ("in.txt", None, BAD, False),
            ("m", "model", EITHER, False), ("empty", "emptydir", BAD, False)]:
        def build(ctx, value=value, setup=setup, expect=expect):
            ctx.copy("exportA", "x")
            ctx.write("in.txt", six_bytes)
            if setup == "model":
                ctx.copy("modelA", "m")
            if setup == "emptydir":
                ctx.mkdir("empty")
            return Spec(["x/loom-translate", "--model", value, "--input",
                         "in.txt", "--beam", "1", "--threads", "1"],
                        expect=expect, watch_root=alone,
                        check=check_line_count(6))
        add("loom-translate/--model=%s" % (value or "''"),
            "loom-translate --model %r" % value, build, expect, alone=alone)
    for value, setup, expect, alone in [
            ("", None, BAD, True), (".", None, BAD, False),
            ("nope", None, BAD, False), ("in.txt", None, BAD, False),
            ("x", "export", EITHER, False)]:
        def build(ctx, value=value, setup=setup, expect=expect):
            ctx.write("in.txt", six_bytes)
            if setup == "export":
                ctx.copy("exportA", "x")
            return Spec(["loom", "translate", "--model", value, "--input",
                         "in.txt", "--beam", "1", "--threads", "1"],
                        expect=expect, watch_root=alone,
                        caches=["x/translate.loomx"],
                        check=check_line_count(6))
        add("translate/--model=%s" % (value or "''"),
            "translate --model %r" % value, build, expect, alone=alone)

    # score.
    for opt, value, expect in [
            ("--tokenize", "", BAD), ("--tokenize", "INTL", BAD),
            ("--tokenize", "13A", EITHER), ("--tokenize", "none ", BAD),
            ("--ref", "", BAD), ("--ref", "d", BAD), ("--ref", "nope", BAD),
            ("--ref", "/dev/null", BAD), ("--input", "", EITHER),
            ("--input", "d", BAD), ("--input", "nope", BAD),
            ("--input", "ref.txt", GOOD)]:
        def build(ctx, opt=opt, value=value, expect=expect):
            ctx.copy("valid.tgt", "ref.txt")
            ctx.mkdir("d")
            argv = ["loom", "score", "--ref", "ref.txt"]
            if opt == "--ref":
                argv = ["loom", "score"]
            return Spec(argv + [opt, value], expect=expect,
                        stdin=ctx.read("ref.txt"),
                        check=check_bleu(100.0 if opt != "--tokenize" else None))
        add("score/%s=%s" % (opt, value or "''"), "score %s %r" % (opt, value),
            build, expect)

    # compile.
    def compile_base(target="ir"):
        if target == "ir":
            return ["loom", "compile", "--preset", "tiny", "-o", "out.mlir"]
        return ["loom", "compile", "--preset", "tiny", "--target", "cpu",
                "--max-tokens", "64", "--max-len", "16", "--max-batch", "4",
                "-o", "out.loomx"]
    for opt in ("--max-tokens", "--max-len", "--max-batch", "--warmup"):
        for target in ("ir", "cpu"):
            for value, label in INT_VALUES:
                if target == "cpu" and label in ("word",):
                    continue
                expect = int_expect(label, huge_ok=True)

                def build(ctx, opt=opt, target=target, value=value,
                          expect=expect):
                    argv = compile_base(target)
                    if opt in argv:
                        i = argv.index(opt)
                        del argv[i:i + 2]
                    out = "out.mlir" if target == "ir" else "out.loomx"
                    return Spec(argv + [opt, value], outputs=[out],
                                expect=expect, check=check_file(out))
                add("compile-%s/%s=%s" % (target, opt, value or "''"),
                    "compile --target %s %s %r" % (target, opt, value), build,
                    expect)
    for opt, value, setup, expect, outputs in [
            ("-o", "", None, BAD, []), ("-o", "d", "dir", BAD, []),
            ("-o", "nope/x.mlir", None, BAD, []),
            ("-o", "f/x.mlir", "file", BAD, []),
            ("-o", "f", "file", EITHER, ["f"]),
            ("--dump-dir", "", None, EITHER, []),
            ("--dump-dir", "f", "file", BAD, []),
            ("--dump-dir", "new/deep", None, EITHER, ["new"]),
            ("--report", "", None, EITHER, []),
            ("--report", "d", "dir", BAD, []),
            ("--report", "nope/r.json", None, BAD, []),
            ("--report", "out.mlir", None, BAD, ["out.mlir"]),
            ("--cpu", "", None, BAD, []), ("--cpu", "NATIVE", None, BAD, []),
            ("--cpu", "x86-64-v5", None, BAD, []),
            ("--target", "", None, BAD, []), ("--target", "CPU", None, BAD, []),
            ("--target", "CUDA", None, BAD, []),
            ("--cuda-arch", "", None, BAD, []),
            ("--cuda-arch", "SM_90", None, BAD, []),
            ("--cuda-arch", "sm_70", None, BAD, []),
            ("--cuda-arch", "sm_80", None, BAD, []),  # with --target ir
            ("--bucket-mb", "0", None, BAD, []),
            ("--bucket-mb", "nan", None, BAD, []),
            ("--bucket-mb", "-1", None, BAD, []),
            ("--bucket-mb", "1e300", None, BAD, []),
            ("--emit", "", None, BAD, []), ("--emit", "llvm", None, BAD, []),
            ("--preset", "", None, BAD, []), ("--preset", "TINY", None, BAD, []),
            ("--preset", "tiny ", None, BAD, []),
            ("--config", "", None, BAD, []),
    ]:
        def build(ctx, opt=opt, value=value, setup=setup, expect=expect,
                  outputs=outputs):
            if setup == "dir":
                ctx.mkdir("d")
            if setup == "file":
                ctx.write("f", b"user data\n")
            argv = compile_base("ir")
            if opt == "-o":
                argv = argv[:-2]
            if opt in ("--preset", "--config"):
                argv = ["loom", "compile", "-o", "out.mlir"]
            return Spec(argv + [opt, value], expect=expect,
                        outputs=list(outputs) + ["out.mlir"])
        add("compile/%s=%s" % (opt, value or "''"), "compile %s %r" % (opt, value),
            build, expect)

    # forward and grad.
    for cmd in ("forward", "grad"):
        for opt, value, expect in (
                [("--threads", v, int_expect(l, zero_ok=True, huge_ok=False))
                 for v, l in INT_VALUES if l != "huge"]
                + [("--threads", "100000", EITHER),
                   ("--backend", "", BAD), ("--backend", "CPU", BAD),
                   ("--backend", "gpu", BAD), ("--backend", "interpreter ", BAD),
                   ("--weights", "", BAD), ("--weights", "d", BAD),
                   ("--src-ids", "", BAD), ("--tgt-ids", "d", BAD),
                   ("--preset", "tiny", EITHER), ("--config", "", BAD)]):
            def build(ctx, cmd=cmd, opt=opt, value=value, expect=expect):
                setup_forward(ctx)
                ctx.mkdir("d")
                argv = forward_argv() if cmd == "forward" else grad_argv()
                if opt in argv:
                    i = argv.index(opt)
                    del argv[i:i + 2]
                if opt == "--preset":
                    i = argv.index("--config")
                    del argv[i:i + 2]
                argv += [opt, value]
                check = None
                outputs = []
                if cmd == "grad":
                    outputs = ["g.safetensors"]
                    check = check_weights_file("g.safetensors")
                elif expect != BAD:
                    check = check_same(ctx.fx.baseline["forward-cpu"])
                return Spec(argv, expect=expect, outputs=outputs, check=check)
            add("%s/%s=%s" % (cmd, opt, value or "''"),
                "%s %s %r" % (cmd, opt, value), build, expect)

    # export.
    for opt, value, setup, expect, outputs, alone in [
            ("--model", "", None, BAD, [], True),
            ("--model", "f", "file", BAD, [], False),
            ("--model", "nope", None, BAD, [], False),
            ("-o", "", None, BAD, [], True),
            ("-o", "m", None, BAD, [], False),
            ("-o", "m/sub", None, BAD, [], False),
            ("-o", "m/checkpoints", None, BAD, [], False),
            ("-o", "f", "file", BAD, [], False),
            ("-o", "f/out", "file", BAD, [], False),
            ("-o", "x", "export", EITHER, ["x"], False),
            ("-o", "new/deep/out", None, GOOD, ["new"], False),
            ("--weights", "", None, EITHER, ["out"], False),
            ("--weights", "d", "dir", BAD, [], False),
            ("--weights", "nope", None, BAD, [], False),
            ("--cpu", "", None, BAD, [], False),
            ("--cpu", "x86-64-v1", None, BAD, [], False),
            ("--cpu", "NATIVE", None, BAD, [], False)]:
        def build(ctx, opt=opt, value=value, setup=setup, expect=expect,
                  outputs=outputs, alone=alone):
            ctx.copy("modelA", "m")
            ctx.copy("valid.src", "in.txt")
            if setup == "file":
                ctx.write("f", b"user data\n")
            if setup == "dir":
                ctx.mkdir("d")
            if setup == "export":
                ctx.copy("exportA", "x")
            argv = ["loom", "export", "--model", "m", "-o", "out"]
            i = argv.index(opt) if opt in argv else None
            if i is not None:
                del argv[i:i + 2]
            argv += [opt, value]
            out = value if opt == "-o" else "out"
            return Spec(argv, expect=expect, outputs=list(outputs) + ["out"],
                        caches=["m/translate.loomx"], watch_root=alone,
                        check=check_export_translates(out)
                        if out and opt != "--cpu" else None)
        add("export/%s=%s" % (opt, value or "''"), "export %s %r" % (opt, value),
            build, expect, alone=alone)

    # demo (short runs).
    for opt, values in [
            ("--task", [("", BAD), ("REVERSE", BAD)]),
            ("--steps", [("-1", BAD), ("0", BAD), ("x", BAD),
                         ("18446744073709551616", BAD)]),
            ("--batch", [("-1", BAD), ("0", BAD), ("2147483648", BAD)]),
            ("--warmup", [("-1", BAD), ("0", BAD)]),
            ("--lr-scale", [("nan", BAD), ("inf", BAD), ("-1", BAD), ("0", BAD)]),
            ("--seed", [("-1", BAD), ("18446744073709551616", BAD)]),
            ("--held-out", [("-1", BAD), ("0", EITHER),
                            ("2147483648", BAD)]),
            ("--threads", [("-1", BAD), ("2147483648", BAD)])]:
        for value, expect in values:
            def build(ctx, opt=opt, value=value, expect=expect):
                argv = ["loom", "demo", "--steps", "3", "--held-out", "2",
                        "--threads", "1"]
                if opt in argv:
                    i = argv.index(opt)
                    del argv[i:i + 2]
                return Spec(argv + [opt, value], expect=expect)
            add("demo/%s=%s" % (opt, value or "''"), "demo %s %r" % (opt, value),
                build, expect)

    # inspect.
    for value, setup, expect in [("", None, BAD), ("d", "dir", BAD),
                                 ("nope", None, BAD), ("/dev/null", None, BAD),
                                 ("w", "weights", BAD), ("c", "config", BAD),
                                 ("e", "loomx", GOOD)]:
        def build(ctx, value=value, setup=setup, expect=expect):
            if setup == "dir":
                ctx.mkdir("d")
            elif setup == "weights":
                ctx.copy("weights", "w")
            elif setup == "config":
                ctx.copy("config", "c")
            elif setup == "loomx":
                ctx.copy("loomx", "e")
            return Spec(["loom", "inspect", value], expect=expect)
        add("inspect/%s" % (value or "''"), "inspect %r" % value, build, expect)

    # Global usage.
    for name, argv, expect in [
            ("no-arguments", ["loom"], BAD),
            ("unknown-command", ["loom", "fly"], BAD),
            ("unknown-option", ["loom", "translate", "--model", "m", "--bogus"],
             BAD),
            ("option-twice", ["loom", "translate", "--model", "m", "--beam", "1",
                              "--beam", "2"], BAD),
            ("extra-positional", ["loom", "score", "--ref", "r", "extra"], BAD),
            ("help", ["loom", "--help"], GOOD),
            ("command-help", ["loom", "train", "--help"], GOOD),
            ("loom-translate-unknown-option", ["loom-translate", "--bogus"], BAD),
            ("loom-translate-bad-number", ["loom-translate", "--beam", "x"], BAD),
            ("loom-opt-unknown-pass", ["loom-opt", "--loom-bogus", "/dev/null"],
             BAD),
            ("loom-opt-missing-file", ["loom-opt", "nope.mlir"], BAD)]:
        def build(ctx, argv=argv, expect=expect):
            ctx.copy("modelA", "m")
            return Spec(argv, expect=expect, stdin=b"alpha\n")
        add("usage/" + name, " ".join(argv), build, expect)
    return probes


# --------------------------------------------------------------------------
# Family: average


def check_average(chosen, out):
    """`out` must hold the mean of the parameters of the `chosen`
    checkpoints (relative paths), optimizer state left out."""
    def check(ctx, r):
        problem = check_weights_file(out)(ctx, r)
        if problem:
            return problem
        got = st_values(ctx.path(out))
        sums = None
        for rel in chosen:
            vals = {k: v for k, v in st_values(ctx.path(rel)).items()
                    if not k.startswith("exp_avg")}
            if sums is None:
                sums = {k: list(v) for k, v in vals.items()}
            else:
                for k, v in vals.items():
                    sums[k] = [a + b for a, b in zip(sums[k], v)]
        if sorted(got) != sorted(sums):
            return "'%s' holds %d tensors, expected %d" % (out, len(got),
                                                           len(sums))
        for k, v in sums.items():
            for a, b in zip(got[k], v):
                want = b / len(chosen)
                if abs(a - want) > 1e-5 * max(1.0, abs(want)):
                    return "tensor %s is %r, the mean is %r" % (k, a, want)
        return None
    return check


def fam_average(seed):
    probes = []

    def add(name, desc, build, expect, key=False, alone=False):
        p = Probe("average", "average/" + name, desc, build, expect=expect,
                  key=key)
        p.alone = alone
        probes.append(p)

    def ckpts(ctx):
        d = ctx.path("m/checkpoints")
        names = [n for n in os.listdir(d) if re.match(r"step-\d+\.safetensors$", n)]
        return ["m/checkpoints/" + n for n in
                sorted(names, key=lambda n: int(re.sub(r"\D", "", n)))]

    def base(ctx):
        ctx.copy("modelA", "m")
        return ckpts(ctx)

    # -o equal to an input.
    for name, pick, last, expect, key in [
            ("o-is-latest", -1, 2, BAD, True), ("o-is-first-chosen", -2, 2, BAD,
                                                 False),
            ("o-is-only-input", -1, 1, BAD, False)]:
        def build(ctx, pick=pick, last=last, expect=expect):
            cs = base(ctx)
            target = cs[pick]
            return Spec(["loom", "average", "m", "--last", str(last), "-o",
                         target], expect=expect)
        add(name, "average -o one of its inputs", build, expect, key=key)

    def write_ckpt(ctx, rel, fn):
        raw = ctx.read(base_ckpt(ctx))
        ctx.write(rel, fn(raw))

    def base_ckpt(ctx):
        return ckpts(ctx)[-1]

    # Checkpoints that do not fit together; the newest is the odd one.
    def newest(ctx):
        return "m/checkpoints/step-9999.safetensors"

    def mut_header(fn):
        def mut(raw):
            h, d = st_read(raw)
            return st_build(*fn(h, d))
        return mut

    def drop_one(h, d):
        del h[[n for n in st_tensor_names(h) if not n.startswith("exp_avg")][0]]
        return h, d

    def add_one(h, d):
        h["foo.weight"] = {"dtype": "F32", "shape": [1],
                           "data_offsets": [len(d), len(d) + 4]}
        return h, d + b"\0" * 4

    def reshape(h, d):
        n = [n for n in st_tensor_names(h) if n.endswith("weight") and
             len(h[n]["shape"]) == 2][0]
        h[n]["shape"] = list(reversed(h[n]["shape"]))
        return h, d

    def to_int(h, d):
        n = st_tensor_names(h)[1]
        h[n]["dtype"] = "I32"
        return h, d

    def drop_moments(h, d):
        out = b""
        for n in st_tensor_names(h):
            if n.startswith("exp_avg"):
                del h[n]
                continue
            b, e = h[n]["data_offsets"]
            h[n] = dict(h[n], data_offsets=[len(out), len(out) + e - b])
            out += d[b:e]
        return h, out

    for name, fn, expect in [
            ("missing-tensor", mut_header(drop_one), BAD),
            ("extra-tensor", mut_header(add_one), BAD),
            ("transposed-tensor", mut_header(reshape), BAD),
            ("int-tensor", mut_header(to_int), BAD),
            ("no-moments", mut_header(drop_moments), GOOD),
            ("nan-value", nan_first_value, BAD),
            ("truncated", lambda raw: raw[:len(raw) // 2], BAD),
            ("empty", lambda raw: b"", BAD),
            ("header-garbage", lambda raw: raw[:8] + b"{" * 20 + raw[28:], BAD)]:
        def build(ctx, fn=fn, expect=expect):
            cs = base(ctx)
            write_ckpt(ctx, newest(ctx), fn)
            return Spec(["loom", "average", "m", "--last", "2", "-o",
                         "avg.safetensors"], expect=expect,
                        outputs=["avg.safetensors"],
                        check=check_average([cs[-1], newest(ctx)],
                                            "avg.safetensors"))
        add("newest-" + name, "average over a checkpoint: %s" % name, build,
            expect)
    for name, setup, expect in [
            ("model-B-checkpoint", lambda ctx: shutil.copyfile(
                os.path.join(ctx.fx.paths["modelB"], "checkpoints",
                             sorted(os.listdir(os.path.join(
                                 ctx.fx.paths["modelB"], "checkpoints")))[-1]),
                ctx.path(newest(ctx))), BAD),
            ("newest-is-directory", lambda ctx: ctx.mkdir(newest(ctx)), BAD),
            ("newest-dangling-symlink", lambda ctx: os.symlink(
                "nowhere", ctx.path(newest(ctx))), BAD),
            ("model-weights-as-checkpoint", lambda ctx: shutil.copyfile(
                ctx.fx.paths["weights"], ctx.path(newest(ctx))), GOOD)]:
        def build(ctx, setup=setup, expect=expect):
            cs = base(ctx)
            setup(ctx)
            return Spec(["loom", "average", "m", "--last", "2", "-o",
                         "avg.safetensors"], expect=expect,
                        outputs=["avg.safetensors"],
                        check=check_average([cs[-1], newest(ctx)],
                                            "avg.safetensors"))
        add(name, "average: %s" % name, build, expect)
    # Names in checkpoints/ that are not quite checkpoints.
    for fname in ["step-abc.safetensors", "step-.safetensors",
                  "step--5.safetensors", "step-99999999999999999999.safetensors",
                  "step-+7.safetensors", "step-0x10.safetensors",
                  "step-5.safetensors.tmp", "STEP-5.safetensors",
                  "step-00001.safetensors"]:
        def build(ctx, fname=fname):
            cs = base(ctx)
            ctx.write("m/checkpoints/" + fname, b"not a checkpoint")
            return Spec(["loom", "average", "m", "--last", "2", "-o",
                         "avg.safetensors"], expect=EITHER,
                        outputs=["avg.safetensors"],
                        check=check_average(cs[-2:], "avg.safetensors"))
        add("stray-file-" + fname, "average with a stray %s" % fname, build,
            EITHER)
    # Options and directories.
    for name, argv, setup, expect, outputs, alone in [
            ("last-0", ["--last", "0"], None, BAD, [], False),
            ("last--1", ["--last", "-1"], None, BAD, [], False),
            ("last-huge", ["--last", "9223372036854775807"], None, BAD, [], False),
            ("last-overflow", ["--last", "18446744073709551616"], None, BAD, [],
             False),
            ("last-x", ["--last", "x"], None, BAD, [], False),
            ("o-directory", ["-o", "d"], "dir", BAD, [], False),
            ("o-missing-dir", ["-o", "nope/a.safetensors"], None, BAD, [], False),
            ("o-under-file", ["-o", "m/config.pbtxt/a"], None, BAD, [], False),
            ("o-empty", ["-o", ""], None, EITHER, ["m/model.safetensors"], False),
            ("o-dash", ["-o", "-"], None, EITHER, ["-"], False),
            ("default-output", [], None, GOOD, ["m/model.safetensors"], False)]:
        def build(ctx, argv=argv, setup=setup, expect=expect, outputs=outputs):
            cs = base(ctx)
            if setup == "dir":
                ctx.mkdir("d")
            head = ["loom", "average", "m"]
            if "--last" not in argv:
                head += ["--last", "2"]
            return Spec(head + argv,
                        expect=expect, outputs=outputs,
                        check=check_average(cs[-2:], outputs[0])
                        if outputs and outputs[0] != "-" else None)
        add(name, "average %s" % " ".join(argv), build, expect, alone=alone)
    for name, d, setup, expect, alone in [
            ("dir-empty-string", "", None, BAD, True),
            ("dir-dot", ".", None, BAD, False),
            ("dir-missing", "nope", None, BAD, False),
            ("dir-is-file", "f", "file", BAD, False),
            ("checkpoints-is-file", "r", "ckfile", BAD, False),
            ("checkpoints-empty", "r", "ckempty", BAD, False)]:
        def build(ctx, d=d, setup=setup, expect=expect, alone=alone):
            if setup == "file":
                ctx.write("f", b"x")
            elif setup == "ckfile":
                ctx.write("r/checkpoints", b"x")
            elif setup == "ckempty":
                ctx.mkdir("r/checkpoints")
            return Spec(["loom", "average", d, "--last", "1", "-o",
                         "avg.safetensors"], expect=expect,
                        outputs=["avg.safetensors"], watch_root=alone)
        add(name, "average %r" % d, build, expect, alone=alone)
    return probes


# --------------------------------------------------------------------------
# Family: loom-opt on mutated MLIR


def mlir_sources(ir_dir):
    """(name, text, [flag lists]) of every .mlir under ir_dir whose RUN
    lines call loom-opt on the file itself."""
    out = []
    if not os.path.isdir(ir_dir):
        return out
    for dirpath, _, files in sorted(os.walk(ir_dir)):
        for f in sorted(files):
            if not f.endswith(".mlir"):
                continue
            path = os.path.join(dirpath, f)
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            flags = []
            for m in re.finditer(r"//\s*RUN:\s*(?:not\s+)?loom-opt\s+%s(.*)",
                                 text):
                cmd = re.split(r"\||2>|>", m.group(1))[0]
                try:
                    words = shlex.split(cmd)
                except ValueError:
                    continue
                args = [a for a in words
                        if a not in ("--verify-diagnostics", "-verify-diagnostics")
                        and not a.startswith("%")]
                cleaned = []
                skip = False
                for a in args:
                    if skip:
                        skip = False
                        continue
                    if a == "-o":
                        skip = True
                        continue
                    cleaned.append(a)
                if cleaned not in flags:
                    flags.append(cleaned)
            if flags:
                out.append((os.path.relpath(path, ir_dir), text, flags))
    return out


MLIR_TYPES = ["i32", "f16", "bf16", "i1", "f64", "index", "i64",
              "complex<f32>", "none", "tensor<f32>"]
MLIR_NUMBERS = ["0", "-1", "2147483648", "9223372036854775807",
                "99999999999999999999", "1.0e309", "-0", "0x7fffffff"]


def mlir_mutate(text, rng):
    """(label, mutated text)."""
    lines = text.split("\n")
    code = [i for i, l in enumerate(lines) if l.strip() and
            not l.strip().startswith("//")]
    if not code:
        return "none", text
    op = rng.randrange(13)
    i = rng.choice(code)
    if op == 0:
        del lines[i]
        return "delete-line", "\n".join(lines)
    if op == 1:
        lines.insert(i, lines[i])
        return "duplicate-line", "\n".join(lines)
    if op == 2 and i + 1 < len(lines):
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
        return "swap-lines", "\n".join(lines)
    if op == 3:
        return "truncate", text[:rng.randrange(len(text))]
    if op == 4:
        nums = list(re.finditer(r"(?<![%\w#^.])\d+", text))
        if nums:
            m = rng.choice(nums)
            return "number", text[:m.start()] + rng.choice(MLIR_NUMBERS) + \
                text[m.end():]
    if op == 5:
        dims = list(re.finditer(r"(?<=[<x])(\d+|\?)(?=x)", text))
        if dims:
            m = rng.choice(dims)
            return "dim", text[:m.start()] + rng.choice(
                ["0", "?", "-1", "9223372036854775807", "4294967296",
                 "1"]) + text[m.end():]
    if op == 6:
        ts = list(re.finditer(r"\bf32\b", text))
        if ts:
            m = rng.choice(ts)
            return "type", text[:m.start()] + rng.choice(MLIR_TYPES) + \
                text[m.end():]
    if op == 7:
        uses = list(re.finditer(r"%[\w]+", text))
        if uses:
            m = rng.choice(uses)
            other = rng.choice(uses).group(0) if rng.random() < 0.5 else "%undefined"
            return "ssa", text[:m.start()] + other + text[m.end():]
    if op == 8:
        pos = rng.randrange(len(text))
        ch = rng.choice(["\0", "\xff", "{", "}", "(", ")", ":", "<", ">", "\"",
                         "#", "@", "^", "\u2028"])
        return "char", text[:pos] + ch + text[pos + 1:]
    if op == 9:
        words = list(re.finditer(r"\S+", lines[i]))
        if words:
            m = rng.choice(words)
            lines[i] = lines[i][:m.start()] + lines[i][m.end():]
            return "delete-token", "\n".join(lines)
    if op == 10:
        attrs = list(re.finditer(r"(\w+)\s*=\s*(-?\d+)", text))
        if attrs:
            m = rng.choice(attrs)
            return "attribute", text[:m.start(2)] + rng.choice(
                ["99", "-5", "9223372036854775807", "-9223372036854775808"]) + \
                text[m.end(2):]
    if op == 11:
        ops = list(re.finditer(r"\bloom\.(\w+)", text))
        if ops:
            m = rng.choice(ops)
            names = sorted(set(o.group(1) for o in ops))
            return "op-name", text[:m.start(1)] + rng.choice(names) + \
                text[m.end(1):]
    if op == 12:
        return "nesting", text + "\n" + "func.func @deep() {\n" + \
            "  \"test.op\"() ({\n" * 2000 + "  }) : () -> ()\n" * 2000 + "}\n"
    pos = rng.randrange(len(text))
    return "insert-garbage", text[:pos] + "}}}" + text[pos:]


def fam_mlir(seed, ir_dir=None):
    ir_dir = ir_dir or os.path.join(REPO, "tests", "ir")
    rng = random.Random("mlir:%d" % seed)
    probes = []
    for rel, text, flag_sets in mlir_sources(ir_dir):
        for j, flags in enumerate(flag_sets):
            def build(ctx, text=text, flags=flags):
                ctx.write("in.mlir", text)
                return Spec(["loom-opt", "in.mlir"] + flags, expect=EITHER,
                            lenient=True,
                            check=lambda c, r: check_roundtrip(c, r, True))
            probes.append(Probe(
                "mlir", "mlir/%s/unmutated-%d" % (rel, j),
                "loom-opt %s on %s as it is" % (" ".join(flags), rel), build,
                expect=EITHER))
        for k in range(26):
            label, mutated = mlir_mutate(text, rng)
            flags = rng.choice(flag_sets)

            def build(ctx, mutated=mutated, flags=flags):
                ctx.write("in.mlir", mutated.encode("utf-8", "surrogateescape"))
                return Spec(["loom-opt", "in.mlir"] + flags, expect=EITHER,
                            lenient=True, check=check_roundtrip)
            probes.append(Probe(
                "mlir", "mlir/%s/%02d-%s" % (rel, k, label),
                "loom-opt %s on %s with one %s mutation" % (" ".join(flags), rel,
                                                            label),
                build, expect=EITHER))
    return probes


def check_roundtrip(ctx, r, strict=False):
    """What loom-opt prints must parse back (LLVM-dialect output only when
    `strict`: the unmutated files check that once)."""
    if not r.stdout.strip():
        return None
    if not strict and b"llvm." in r.stdout:
        return None
    ctx.write("printed.mlir", r.stdout)
    r2 = ctx.run(["loom-opt", "printed.mlir"])
    if r2.timed_out or r2.rc != 0:
        return "its output does not parse back: exit %s: %s" % (
            r2.rc, excerpt(r2.stderr, 300))
    return None


# --------------------------------------------------------------------------
# Family: model directories


def modeldir_mutations():
    """(name, fn(ctx, dir), kind). kind: bad, same (translations unchanged),
    either."""
    def rm(rel):
        def fn(ctx, d):
            p = ctx.path(d + "/" + rel)
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p)
            elif os.path.lexists(p):
                os.unlink(p)
        return fn

    def replace_dir(rel):
        def fn(ctx, d):
            rm(rel)(ctx, d)
            ctx.mkdir(d + "/" + rel)
            ctx.write(d + "/" + rel + "/inside", b"x")
        return fn

    def replace_bytes(rel, data):
        def fn(ctx, d):
            rm(rel)(ctx, d)
            ctx.write(d + "/" + rel, data)
        return fn

    def replace_fixture(rel, key):
        def fn(ctx, d):
            rm(rel)(ctx, d)
            ctx.copy(key, d + "/" + rel)
        return fn

    def truncate(rel):
        def fn(ctx, d):
            data = ctx.read(d + "/" + rel)
            ctx.write(d + "/" + rel, data[:len(data) // 2])
        return fn

    def edit_config(field, value):
        def fn(ctx, d):
            text = ctx.read(d + "/config.pbtxt").decode()
            ctx.write(d + "/config.pbtxt", set_field(text, field, value))
        return fn

    def symlink(rel, target):
        def fn(ctx, d):
            rm(rel)(ctx, d)
            os.symlink(target, ctx.path(d + "/" + rel))
        return fn

    return [
        ("spm-directory", replace_dir("spm.model"), "bad"),
        ("spm-empty", replace_bytes("spm.model", b""), "bad"),
        ("spm-garbage", replace_bytes("spm.model", b"not a model\n" * 10), "bad"),
        ("spm-truncated", truncate("spm.model"), "bad"),
        ("spm-missing", rm("spm.model"), "bad"),
        ("spm-dangling-symlink", symlink("spm.model", "nowhere"), "bad"),
        ("spm-of-model-C", replace_fixture("spm.model", "spmC"), "bad"),
        ("spm-of-model-B", replace_fixture("spm.model", "spmB"), "bad"),
        ("spm-is-weights", replace_fixture("spm.model", "weights"), "bad"),
        ("config-missing", rm("config.pbtxt"), "bad"),
        ("config-directory", replace_dir("config.pbtxt"), "bad"),
        ("config-empty", replace_bytes("config.pbtxt", b""), "bad"),
        ("config-d_ff-changed", edit_config("d_ff", "128"), "bad"),
        ("config-vocab-changed", edit_config("tgt_vocab", "64"), "bad"),
        ("config-src-vocab-changed", edit_config("src_vocab", "16"), "bad"),
        ("config-layers-changed", edit_config("encoder_layers", "1"), "bad"),
        ("config-heads-changed", edit_config("heads", "4"), "either"),
        ("config-norm-changed", edit_config("norm", "PRE"), "either"),
        ("config-final-norm-added", edit_config("final_norm", "true"), "bad"),
        ("config-tie-output-added", edit_config("tie_output", "true"), "either"),
        ("config-dropout-changed", edit_config("dropout", "0.3"), "same"),
        ("config-label-smoothing-changed", edit_config("label_smoothing", "0.2"),
         "same"),
        ("config-max-len-8", edit_config("max_len", "8"), "either"),
        ("config-max-len-1", edit_config("max_len", "1"), "bad"),
        ("config-max-len-huge", edit_config("max_len", "4611686018427387904"),
         "bad"),
        ("config-vocab-2^59", lambda ctx, d: (
            edit_config("tgt_vocab", "576460752303423488")(ctx, d),
            edit_config("src_vocab", "576460752303423488")(ctx, d)), "bad"),
        ("weights-missing", rm("model.safetensors"), "bad"),
        ("weights-directory", replace_dir("model.safetensors"), "bad"),
        ("weights-of-model-B", replace_fixture("model.safetensors", "weightsB"),
         "bad"),
        ("loomx-missing", rm("translate.loomx"), "same"),
        ("loomx-directory", replace_dir("translate.loomx"), "same"),
        ("loomx-of-model-B", replace_fixture("translate.loomx", "loomxB"), "same"),
        ("loomx-full-tiny", replace_fixture("translate.loomx", "full.loomx"),
         "same"),
        ("loomx-x86-64-v2", replace_fixture("translate.loomx", "v2.loomx"),
         "same"),
        ("checkpoints-removed", rm("checkpoints"), "same"),
        ("extra-files", lambda ctx, d: ctx.write(d + "/README", b"mine"), "same"),
        ("everything-missing", lambda ctx, d: (shutil.rmtree(ctx.path(d)),
                                               ctx.mkdir(d)), "bad"),
        ("dir-is-file", lambda ctx, d: (shutil.rmtree(ctx.path(d)),
                                        ctx.write(d, b"x")), "bad"),
    ]


MODELDIR_CONSUMERS = ["translate", "export", "resume"]


def fam_modeldir(seed):
    probes = []
    six = make_corpus_lines(20, 2)[:6]
    six_bytes = ("".join(s + "\n" for s in six)).encode()
    for name, fn, kind in modeldir_mutations():
        consumers = list(MODELDIR_CONSUMERS)
        if name.startswith("spm"):
            consumers.append("loom-translate")
        for consumer in consumers:
            if consumer == "resume" and not (name.startswith("config") or
                                             name.startswith("spm")):
                continue

            def build(ctx, fn=fn, kind=kind, consumer=consumer):
                fx = ctx.fx
                ctx.write("in.txt", six_bytes)
                want = check_same(fx.baseline_for_six, "the translation")
                if consumer == "loom-translate":
                    ctx.copy("exportA", "m")
                    fn(ctx, "m")
                    return Spec(["m/loom-translate", "--input", "in.txt",
                                 "--beam", "1", "--threads", "1"],
                                expect=BAD if kind == "bad" else EITHER,
                                check=want if kind == "same"
                                else check_line_count(6))
                ctx.copy("modelA", "m")
                fn(ctx, "m")
                expect = {"bad": BAD, "same": GOOD}.get(kind, EITHER)
                if consumer == "translate":
                    return Spec(translate_argv(extra=["--input", "in.txt",
                                                      "--beam", "1"]),
                                caches=["m/translate.loomx"], expect=expect,
                                check=want if kind == "same"
                                else check_line_count(6))
                if consumer == "export":
                    return Spec(["loom", "export", "--model", "m", "-o", "out"],
                                outputs=["out"], caches=["m/translate.loomx"],
                                expect=expect,
                                check=check_export_translates_six("out")
                                if kind == "same" else None)
                ctx.copy("train.src", "tr.src")
                ctx.copy("train.tgt", "tr.tgt")
                return Spec(["loom", "train", "--resume", "--train", "tr.src",
                             "tr.tgt", "--out", "m", "--steps", "402",
                             "--threads", "1", "--progress", "lines"],
                            outputs=["m"], caches=["m/translate.loomx"],
                            expect=BAD if kind in ("bad", "either") or
                            name.startswith("config") else EITHER,
                            check=check_model_dir("m"))
            probes.append(Probe(
                "modeldir", "modeldir/%s/%s" % (name, consumer),
                "model directory: %s (%s)" % (name, kind), build,
                expect={"bad": BAD, "same": GOOD}.get(kind, EITHER),
                slow=consumer == "resume",
                key=(name, consumer) in {("spm-directory", "translate"),
                                         ("spm-of-model-C", "translate"),
                                         ("config-vocab-2^59", "translate")}))
    return probes


def check_export_translates_six(rel):
    def check(ctx, r):
        r2 = ctx.run([rel + "/loom-translate", "--input", "in.txt", "--beam",
                      "1", "--threads", "1"])
        if r2.rc != 0:
            return "the exported folder does not translate: exit %s: %s" % (
                r2.rc, excerpt(r2.stderr, 200))
        if r2.stdout != ctx.fx.baseline_for_six:
            return "the exported folder translates differently: %r" % excerpt(
                r2.stdout, 200)
        return None
    return check


# --------------------------------------------------------------------------
# Family: bench


def fam_bench(seed):
    probes = []
    cases = []
    for mode in ("train", "decode"):
        for opt, value, expect in [
                ("--batch", "2147483648", BAD), ("--batch", "4294967296", BAD),
                ("--batch", "9223372036854775807", BAD),
                ("--batch", "100000", EITHER),
                ("--src-len", "2147483648", BAD), ("--src-len", "100000", BAD),
                ("--src-len", "257", EITHER), ("--src-len", "256", EITHER),
                ("--tgt-len", "100000", BAD), ("--tgt-len", "2147483648", BAD),
                ("--tgt-len", "257", EITHER), ("--tgt-len", "1", BAD),
                ("--steps", "2147483648", BAD), ("--steps", "-1", BAD),
                ("--warmup", "-1", BAD), ("--warmup", "2147483648", BAD),
                ("--threads", "-1", BAD), ("--threads", "2147483648", BAD),
                ("--batch", "nan", BAD), ("--src-len", "", BAD)]:
            cases.append((mode, opt, value, expect))
        cases.append((mode, "both", "--batch 65536 --src-len 65536", BAD))
    for mode, opt, value, expect in cases:
        def build(ctx, mode=mode, opt=opt, value=value, expect=expect):
            argv = ["loom", "bench", mode, "--preset", "tiny", "--batch", "2",
                    "--src-len", "4", "--tgt-len", "4", "--steps", "1",
                    "--warmup", "0", "--threads", "1"]
            if opt == "both":
                extra = value.split()
            else:
                extra = [opt, value]
            for i in range(0, len(extra), 2):
                if extra[i] in argv:
                    j = argv.index(extra[i])
                    del argv[j:j + 2]
            return Spec(argv + extra, expect=expect, check=check_bench_json)
        probes.append(Probe(
            "bench", "bench/%s/%s=%s" % (mode, opt, value.replace(" ", "_") or "''"),
            "bench %s %s %r" % (mode, opt, value), build, expect=expect,
            slow=True,
            key=(mode, opt, value) == ("decode", "--tgt-len", "100000")))
    for mode in ("train", "decode"):
        for name, cfg in [("vocab-2^40", {"src_vocab": 1 << 40,
                                          "tgt_vocab": 1 << 40}),
                          ("d_model-2^20", {"d_model": 1 << 20, "heads": 1}),
                          ("d_ff-2^40", {"d_ff": 1 << 40})]:
            def build(ctx, mode=mode, cfg=cfg):
                text = ctx.fixture_bytes("config").decode()
                for f, v in cfg.items():
                    text = set_field(text, f, v)
                ctx.write("c.pbtxt", text)
                return Spec(["loom", "bench", mode, "--config", "c.pbtxt",
                             "--batch", "2", "--src-len", "4", "--tgt-len", "4",
                             "--steps", "1", "--warmup", "0", "--threads", "1"],
                            expect=BAD)
            probes.append(Probe("bench", "bench/%s/config-%s" % (mode, name),
                                "bench %s with config %s" % (mode, name), build))
    return probes


def damaged_bytes(rng, good, edits, cut, insert):
    """`good` with 1 to `edits` random damages: a bit flipped, up to `cut`
    bytes deleted, or up to `insert` random bytes inserted."""
    data = bytearray(good)
    for _ in range(rng.randint(1, edits)):
        at = rng.randrange(len(data))
        kind = rng.randrange(3)
        if kind == 0:
            data[at] ^= 1 << rng.randrange(8)
        elif kind == 1:
            del data[at:at + rng.randint(1, cut)]
        else:
            data[at:at] = bytes(rng.randrange(256)
                                for _ in range(rng.randint(1, insert)))
    return bytes(data)


# --------------------------------------------------------------------------
# Family: plot (`loom plot`, drawn by tools/loom/loom-plot.py)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def plot_train(step, loss="4.5", lr="0.0005", tps="12000", elapsed=None):
    """A train record as `loom train` writes it (api/train/Observers.cpp)."""
    return ('{"type": "train", "step": %d, "epoch": 1, "loss": %s, "lr": %s, '
            '"tokens_per_s": %s, "tokens": %d, "elapsed_s": %s, "ranks": 1, '
            '"wait_share": 0}\n' % (step, loss, lr, tps, step * 5000,
                                    elapsed or str(step * 0.4)))


def plot_valid(step, nll="3.5", bleu="12.5", elapsed=None):
    return ('{"type": "valid", "step": %d, "epoch": 1, "valid_nll": %s, '
            '"valid_ppl": 33.1, "valid_bleu": %s, "valid_s": 1.5, '
            '"elapsed_s": %s}\n' % (step, nll, bleu, elapsed or str(step * 0.4 + 1.5)))


def plot_metrics(steps=6):
    """A run's metrics.jsonl: a train record every 50 steps, a valid one
    every 100."""
    text = ""
    for i in range(1, steps + 1):
        step = 50 * i
        text += plot_train(step, loss="%.4f" % (8.0 / math.sqrt(i)),
                           lr="%.6g" % (1e-3 * min(1, i / 4)))
        if i % 2 == 0:
            text += plot_valid(step, nll="%.4f" % (6.0 / math.sqrt(i)),
                               bleu="%.2f" % (3.0 * i))
    return text.encode()


def check_png(rel):
    return check_file(rel, prefix=PNG_SIGNATURE)


def fam_plot(seed):
    probes = []
    rng = random.Random("plot:%s" % seed)

    def add(name, desc, build, expect, key=False):
        probes.append(Probe("plot", "plot/" + name, desc, build, expect=expect,
                            key=key))

    def run(ctx, rel="r", data=None):
        ctx.write(rel + "/metrics.jsonl",
                  plot_metrics() if data is None else data)
        return rel

    def plot_spec(runs, out="out.png", extra=(), expect=None, outputs=None):
        return Spec(["loom", "plot"] + list(runs) + ["-o", out] + list(extra),
                    expect=expect,
                    outputs=[out] if outputs is None else outputs,
                    check=check_png(out) if out else None)

    good = plot_metrics()
    good_lines = good.decode().splitlines(True)
    # Metrics files: (name, bytes, expectation, key).
    contents = [
        # Not UTF-8: a UnicodeDecodeError traceback.
        ("not-utf8", good + b'{"type": "note", "text": "caf\xe9"}\n', BAD, True),
        ("not-utf8-in-number", good + plot_train(400, loss="4.\xff").encode("latin-1"),
         BAD, False),
        ("not-json", good + b'{"type": "train", "step": 3\n', BAD, False),
        ("not-object", good + b"[1, 2]\n", BAD, False),
        ("missing-field", good + b'{"type": "valid", "step": 3, "elapsed_s": 1, '
                                 b'"valid_nll": 2}\n', BAD, False),
        ("bool", good + plot_train(400, loss="true").encode(), BAD, False),
        ("bool-step", good + plot_train(400).replace('"step": 400', '"step": false')
         .encode(), BAD, False),
        ("string", good + plot_train(400, lr='"1e-3"').encode(), BAD, False),
        ("list", good + plot_train(400, tps="[1, 2]").encode(), BAD, False),
        ("object", good + plot_valid(400, bleu='{"greedy": 1}').encode(), BAD, False),
        # 100000 nested '[': a RecursionError traceback in json.
        ("deep-nesting", good + b"[" * 100000 + b"\n", BAD, True),
        ("deep-nesting-in-field", good + plot_train(400, loss="[" * 50000 + "]" * 50000)
         .encode(), BAD, False),
        ("empty", b"", BAD, False),
        ("blank-lines", b"\n \n\r\n\t\n", BAD, False),
        ("other-records-only", b'{"type": "checkpoint", "step": 4}\n', BAD, False),
        ("line-2mib", good + b'{"type": "note", "text": "' + b"x" * (2 << 20) + b'"}\n',
         BAD, True),
        # Numbers no double holds: an OverflowError or Python's
        # int-string-length ValueError as a traceback. Gaps in the curve.
        ("int-400-digits", good + plot_train(400, loss="9" * 400).encode(), GOOD, True),
        ("int-5000-digits", good + plot_train(400, loss="9" * 5000).encode(), GOOD, True),
        ("int-5000-digits-negative", good + plot_train(400, lr="-" + "9" * 5000).encode(),
         GOOD, False),
        ("step-5000-digits", good + plot_train(400).replace('"step": 400', '"step": ' + "9" * 5000)
         .encode(), GOOD, False),
        ("exponent-1e999", good + plot_train(400, loss="1e999", lr="-1e999").encode(),
         GOOD, False),
        ("exponent-huge", good + plot_train(400, tps="1e" + "9" * 40).encode(), GOOD, False),
        # 1e308 and -1e308 in one panel: an IndexError in tight_layout.
        ("plus-minus-1e308", good + plot_train(400, lr="1e308").encode() +
         plot_train(450, lr="-1e308").encode(), GOOD, True),
        ("max-double", good + plot_train(400, loss="1.7976931348623157e308").encode(),
         GOOD, False),
        ("subnormal", good + plot_train(400, loss="5e-324").encode(), GOOD, False),
        ("nan-infinity-literals", good + plot_train(400, loss="NaN", lr="Infinity",
                                                    tps="-Infinity").encode(), GOOD, False),
        ("nulls", good + plot_train(400, loss="null", lr="null", tps="null").encode() +
         plot_valid(400, nll="null", bleu="null").encode(), GOOD, False),
        ("null-step-and-time", good + plot_train(400, elapsed="null")
         .replace('"step": 400', '"step": null').encode(), GOOD, False),
        ("all-null", (plot_train(1, loss="null", lr="null", tps="null") +
                      plot_valid(1, nll="null", bleu="null")).encode(), GOOD, False),
        ("train-only", "".join(l for l in good_lines if '"train"' in l).encode(),
         GOOD, False),
        ("valid-only", "".join(l for l in good_lines if '"valid"' in l).encode(),
         GOOD, False),
        ("single-train-record", good_lines[0].encode(), GOOD, False),
        ("single-valid-record", plot_valid(1).encode(), GOOD, False),
        ("negative-and-zero-loss", (plot_train(1, loss="-1") + plot_train(2, loss="0"))
         .encode(), GOOD, False),
        ("steps-backwards", "".join(reversed(good_lines)).encode(), GOOD, False),
        ("float-steps", good.replace(b'"step": 50,', b'"step": 50.5,'), GOOD, False),
        ("crlf", good.replace(b"\n", b"\r\n"), GOOD, False),
        ("cr-only", good.replace(b"\n", b"\r"), GOOD, False),
        ("utf8-bom", b"\xef\xbb\xbf" + good, GOOD, False),
        ("nul-in-string", good + b'{"type": "note", "text": "a\\u0000b"}\n', GOOD, False),
        ("later-version-records", good + b'{"type": "checkpoint", "path": [1, {"a": 2}]}\n'
         + b'{"step": 3}\n', GOOD, False),
        # The last record cut while `loom train` appends it.
        ("torn-last-line", good + plot_train(400).encode()[:40], EITHER, False),
        ("torn-last-utf8", good + b'{"type": "note", "text": "\xc3', EITHER, False),
        ("no-final-newline", good[:-1], GOOD, False),
    ]
    for name, data, expect, key in contents:
        def build(ctx, data=data, expect=expect):
            return plot_spec([run(ctx, data=data)], expect=expect)
        add("metrics-" + name, "loom plot on metrics: %s" % name, build, expect,
            key=key)
    # Damaged copies of a good file: a clean refusal or a picture.
    for i in range(20):
        data = damaged_bytes(rng, good, edits=4, cut=40, insert=8)

        def build(ctx, data=data):
            return plot_spec([run(ctx, data=data)], expect=EITHER)
        add("metrics-damaged-%02d" % i, "loom plot on damaged metrics", build, EITHER)

    # Files that are not metrics files: they must not hang or fill memory.
    def fifo(ctx):
        ctx.mkdir("r")
        os.mkfifo(ctx.path("r/metrics.jsonl"))
        return ["r"]

    def devzero_link(ctx):
        ctx.mkdir("r")
        os.symlink("/dev/zero", ctx.path("r/metrics.jsonl"))
        return ["r"]

    def sparse(ctx):
        # Over the 512 MiB limit, without writing it (hashing it costs the
        # probe a second or two).
        ctx.mkdir("r")
        with open(ctx.path("r/metrics.jsonl"), "wb") as f:
            f.truncate((513 << 20))
        return ["r"]

    def metrics_dir(ctx):
        ctx.mkdir("r/metrics.jsonl")
        return ["r"]

    def dangling(ctx):
        ctx.mkdir("r")
        os.symlink("nowhere", ctx.path("r/metrics.jsonl"))
        return ["r"]

    for name, setup, key in [
            ("fifo", fifo, True), ("dev-zero-link", devzero_link, True),
            ("dev-zero", lambda ctx: ["/dev/zero"], False),
            ("dev-urandom", lambda ctx: ["/dev/urandom"], False),
            ("sparse-513mib", sparse, False), ("metrics-is-directory", metrics_dir, False),
            ("metrics-dangling-link", dangling, False),
            ("run-missing", lambda ctx: ["nope"], False),
            ("run-empty-path", lambda ctx: [""], False),
            ("run-without-metrics", lambda ctx: [ctx.mkdir("r")], False),
            ("run-twice", lambda ctx: [run(ctx), "r/metrics.jsonl"], False)]:
        def build(ctx, setup=setup):
            return plot_spec(setup(ctx), expect=BAD)
        add("input-" + name, "loom plot RUN: %s" % name, build, BAD, key=key)

    # Text matplotlib would have parsed as mathtext ("$\frac{$" raised), or
    # cannot draw (control characters): drawn literally.
    texts = [("frac-open", "$\\frac{"), ("frac-closed", "$\\frac{$"), ("one-dollar", "a$b"),
             ("three-dollars", "$$$"), ("caret", "$x^$"), ("escaped-dollar", "\\$"),
             ("underscore-start", "_hidden"), ("control", "soh\x01 bell\x07"),
             ("escape-sequence", "\x1b[31mred"), ("newlines", "one\ntwo\nthree"),
             ("tab", "a\tb"), ("unicode", "caf\u00e9 \u6f22\u5b57 \U0001F600 \u202eab"),
             ("percent-braces", "%s %d {} {0}"), ("backslashes", "\\\\ \\n \\x00"),
             ("surrogate-bytes", "bad\udcff"), ("empty", ""), ("1000-chars", "x" * 1000)]
    for name, text in texts:
        def build(ctx, text=text):
            return plot_spec([run(ctx)], extra=["--title", text])
        add("title-" + name, "loom plot --title %r" % text[:40], build, GOOD,
            key=name == "frac-closed")

        def build(ctx, text=text):
            return plot_spec([run(ctx, "r1"), run(ctx, "r2")],
                             extra=["--label", text, "--label", "second"])
        add("label-" + name, "loom plot --label %r" % text[:40], build, GOOD,
            key=name == "frac-closed")
    # A run's directory name is its label.
    for name, directory in [("dollar-frac", "run$\\frac{$"), ("dollars", "a$b$c"),
                            ("newline", "run\nname"), ("control", "run\x01\x07"),
                            ("underscore", "_run"), ("not-utf8", "run\udcff"),
                            ("dot-dir", ".")]:
        def build(ctx, directory=directory):
            if directory == ".":
                # The work directory is then a run directory: of it, only
                # its own curves.png may be written.
                ctx.write("metrics.jsonl", good)
                return plot_spec(["."], out="curves.png")
            return plot_spec([run(ctx, directory)])
        add("dirname-" + name, "loom plot on a run named %r" % directory, build, GOOD,
            key=name == "dollar-frac")
    for name, extra in [("title-1001-chars", ["--title", "x" * 1001]),
                        ("label-1001-chars", ["--label", "x" * 1001]),
                        ("labels-more-than-runs", ["--label", "a", "--label", "b"]),
                        ("title-twice", ["--title", "a", "--title", "b"]),
                        ("unknown-option", ["--colour", "red"])]:
        def build(ctx, extra=extra):
            return plot_spec([run(ctx)], extra=extra, expect=BAD)
        add("args-" + name, "loom plot %s" % " ".join(extra)[:60], build, BAD)

    def no_runs(ctx):
        return Spec(["loom", "plot", "-o", "out.png"], expect=BAD)
    add("args-no-runs", "loom plot without a RUN", no_runs, BAD)

    def no_output(ctx):
        return Spec(["loom", "plot", run(ctx)], expect=BAD)
    add("args-no-output", "loom plot without -o", no_output, BAD)

    def fewer_labels(ctx):
        return plot_spec([run(ctx, "r1"), run(ctx, "r2")], extra=["--label", "first"])
    add("args-fewer-labels", "loom plot, one --label for two runs", fewer_labels, GOOD)

    def many_runs(ctx):
        return plot_spec([run(ctx, "r%02d" % i) for i in range(14)])
    add("args-14-runs", "loom plot on 14 runs (more than the colours)", many_runs, GOOD)

    # -o: never a file it would destroy.
    def png_at(ctx, rel):
        ctx.write(rel, PNG_SIGNATURE + b"an older picture")

    def fifo_out(ctx):
        os.mkfifo(ctx.path("out.png"))

    for name, out, setup, key in [
            ("is-metrics", "r/metrics.jsonl", None, True),
            ("symlink-to-metrics", "link.png",
             lambda ctx: os.symlink("r/metrics.jsonl", ctx.path("link.png")), False),
            ("hardlink-to-metrics", "hard.png",
             lambda ctx: os.link(ctx.path("r/metrics.jsonl"), ctx.path("hard.png")), False),
            ("existing-text", "notes.png", lambda ctx: ctx.write("notes.png", "notes\n"), True),
            ("existing-jpeg", "photo.png",
             lambda ctx: ctx.write("photo.png", b"\xff\xd8\xff\xe0" + b"\0" * 100), False),
            ("directory", "d", lambda ctx: ctx.mkdir("d"), False),
            ("trailing-slash", "new/", None, False),
            ("fifo", "out.png", fifo_out, False),
            ("empty", "", None, False),
            ("dash", "-", None, False),
            ("pdf", "out.pdf", None, False),
            ("no-suffix", "out", None, False),
            ("missing-folder", "nodir/out.png", None, False),
            ("under-a-file", "r/metrics.jsonl/out.png", None, False),
            ("in-run-not-curves", "r/other.png", None, True),
            ("curves-of-run-not-drawn", "r2/curves.png", lambda ctx: run(ctx, "r2"), True),
            ("curves-existing-not-png", "r/curves.png",
             lambda ctx: ctx.write("r/curves.png", "not a picture\n"), False)]:
        def build(ctx, out=out, setup=setup):
            run(ctx)
            if setup:
                setup(ctx)
            return plot_spec(["r"], out=out, expect=BAD, outputs=[])
        add("o-" + name, "loom plot -o %r" % out, build, BAD, key=key)

    def twice(ctx):
        return plot_spec([run(ctx)], extra=["-o", "other.png"], expect=BAD, outputs=[])
    add("o-twice", "loom plot -o out.png -o other.png", twice, BAD)

    for name, runs, out, setup in [
            # What `loom train` runs after each validation.
            ("own-curves", ["r"], "r/curves.png", None),
            ("own-curves-replaced", ["r"], "r/curves.png", lambda ctx: png_at(ctx, "r/curves.png")),
            ("own-curves-of-metrics-file", ["r/metrics.jsonl"], "r/curves.png", None),
            ("own-curves-with-other-run", ["r2", "r/"], "r//curves.png",
             lambda ctx: run(ctx, "r2")),
            ("existing-png", ["r"], "old.png", lambda ctx: png_at(ctx, "old.png")),
            ("existing-empty-file", ["r"], "empty.png", lambda ctx: ctx.write("empty.png", b"")),
            ("upper-case-suffix", ["r"], "OUT.PNG", None),
            ("symlink-to-png", ["r"], "link.png", lambda ctx: (
                png_at(ctx, "pics/real.png"),
                os.symlink("pics/real.png", ctx.path("link.png"))))]:
        def build(ctx, runs=runs, out=out, setup=setup):
            run(ctx)
            if setup:
                setup(ctx)
            outputs = [os.path.normpath(out)]
            if out == "link.png":
                outputs = ["pics/real.png"]  # written through the link
            spec = plot_spec(runs, out=out, outputs=outputs)
            spec.check = check_png(outputs[0])
            return spec
        add("o-" + name, "loom plot %s -o %r" % (" ".join(runs), out), build, GOOD)
    return probes


# --------------------------------------------------------------------------
# Family: onnx (`loom import`, `loom compile`, `loom onnx-test` on models
# written here with a minimal protobuf writer: no onnx package needed)

def pb_varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def pb_field(number, value):
    """A field of `value`: int (varint), bytes/str (length-delimited),
    float (fixed32)."""
    if isinstance(value, bool) or isinstance(value, int):
        return pb_varint(number << 3) + pb_varint(value)
    if isinstance(value, float):
        return pb_varint((number << 3) | 5) + struct.pack("<f", value)
    if isinstance(value, str):
        value = value.encode()
    return pb_varint((number << 3) | 2) + pb_varint(len(value)) + value


ONNX_FLOAT, ONNX_INT64 = 1, 7


def onnx_tensor(name, dims, values, kind=ONNX_FLOAT):
    """A TensorProto with raw little-endian data."""
    raw = struct.pack("<%d%s" % (len(values), "f" if kind == ONNX_FLOAT else "q"),
                      *values)
    return (b"".join(pb_field(1, d) for d in dims) + pb_field(2, kind) +
            pb_field(8, name) + pb_field(9, raw))


def onnx_attr(name, value):
    # AttributeProto: name 1, f 2, i 3, t 5, ints 8, type 20 (FLOAT 1, INT 2,
    # TENSOR 4, INTS 7).
    if isinstance(value, float):
        return pb_field(1, name) + pb_field(2, value) + pb_field(20, 1)
    if isinstance(value, int):
        return pb_field(1, name) + pb_field(3, value) + pb_field(20, 2)
    if isinstance(value, list):
        return (pb_field(1, name) + b"".join(pb_field(8, v) for v in value) +
                pb_field(20, 7))
    return pb_field(1, name) + pb_field(5, value) + pb_field(20, 4)


def onnx_node(op, inputs, outputs, **attrs):
    return (b"".join(pb_field(1, i) for i in inputs) +
            b"".join(pb_field(2, o) for o in outputs) + pb_field(4, op) +
            b"".join(pb_field(5, onnx_attr(k, v)) for k, v in attrs.items()))


def onnx_value(name, dims, kind=ONNX_FLOAT):
    """A ValueInfoProto; a str dim is named (dynamic), None has no shape."""
    if dims is None:
        shape = b""
    else:
        shape = pb_field(2, b"".join(
            pb_field(1, pb_field(2, d) if isinstance(d, str) else pb_field(1, d))
            for d in dims))
    return pb_field(1, name) + pb_field(2, pb_field(1, pb_field(1, kind) + shape))


def onnx_model(nodes, inputs, outputs, inits=(), opset=17):
    graph = (b"".join(pb_field(1, n) for n in nodes) + pb_field(2, "probe") +
             b"".join(pb_field(5, t) for t in inits) +
             b"".join(pb_field(11, v) for v in inputs) +
             b"".join(pb_field(12, v) for v in outputs))
    return (pb_field(1, 8) + pb_field(7, graph) +
            pb_field(8, pb_field(1, "") + pb_field(2, opset)))


def onnx_test_folder(ctx, rel, model, inputs, outputs):
    """A backend-test folder: model.onnx and test_data_set_0 of tensors
    (name, dims, values)."""
    ctx.write(rel + "/model.onnx", model)
    for kind, tensors in (("input", inputs), ("output", outputs)):
        for i, (name, dims, values) in enumerate(tensors):
            ctx.write("%s/test_data_set_0/%s_%d.pb" % (rel, kind, i),
                      onnx_tensor(name, dims, values))
    return rel


def fam_onnx(seed):
    probes = []
    rng = random.Random("onnx:%s" % seed)

    def add(name, desc, build, expect, key=False, slow=False):
        probes.append(Probe("onnx", "onnx/" + name, desc, build, expect=expect,
                            key=key, slow=slow))

    def consumers(name, model, expect, key=False, check=None):
        """The model through import, compile for the CPU and, for a model
        that must run, onnx-test (with `check`'s data)."""
        def imp(ctx):
            ctx.write("m.onnx", model)
            return Spec(["loom", "import", "m.onnx", "-o", "out.mlir"],
                        outputs=["out.mlir"], expect=expect)
        add(name + "/import", "loom import: " + name, imp, expect, key=key)

        def cpu(ctx):
            ctx.write("m.onnx", model)
            return Spec(["loom", "compile", "m.onnx", "--target", "cpu", "-o",
                         "out.loomx"], outputs=["out.loomx"], expect=expect,
                        timeout=120)
        add(name + "/compile-cpu", "loom compile --target cpu: " + name, cpu,
            expect, key=key)

    x6 = [float(v) - 2.5 for v in range(6)]
    relu = onnx_node("Relu", ["x"], ["y"])

    # Crashes: a chain deeper than any recursion, sizes past any memory.
    chain = [onnx_node("Neg", ["x" if i == 0 else "t%d" % (i - 1)], ["t%d" % i])
             for i in range(30000)]
    deep = onnx_model(chain, [onnx_value("x", [2, 3])],
                      [onnx_value("t29999", [2, 3])])
    consumers("deep-chain-30000", deep, GOOD, key=True)

    def deep_test(ctx):
        onnx_test_folder(ctx, "t", deep, [("x", [2, 3], x6)], [("y", [2, 3], x6)])
        return Spec(["loom", "onnx-test", "t", "--strict"], timeout=120,
                    check=lambda ctx, r: None if b"PASS t" in r.stdout
                    else "the chain did not pass")
    add("deep-chain-30000/onnx-test", "loom onnx-test on a 30,000-node chain",
        deep_test, GOOD)

    sized = [
        ("input-2^80-elements", onnx_model([relu], [onnx_value("x", [1 << 40, 1 << 40])],
                                           [onnx_value("y", None)]), True),
        ("input-negative-dim", onnx_model([relu], [onnx_value("x", [2, -5])],
                                          [onnx_value("y", None)]), True),
        ("input-dim-2^63", onnx_model([relu], [onnx_value("x", [2, (1 << 63) - 1])],
                                      [onnx_value("y", None)]), False),
        ("constant-of-shape-overflow", onnx_model(
            [onnx_node("ConstantOfShape", ["s"], ["y"])], [], [onnx_value("y", None)],
            [onnx_tensor("s", [2], [1 << 62, 4], ONNX_INT64)]), True),
        ("constant-of-shape-negative", onnx_model(
            [onnx_node("ConstantOfShape", ["s"], ["y"])], [], [onnx_value("y", None)],
            [onnx_tensor("s", [2], [-3, 4], ONNX_INT64)]), False),
        ("range-2^62", onnx_model(
            [onnx_node("Range", ["a", "b", "d"], ["y"])], [],
            [onnx_value("y", None, ONNX_INT64)],
            [onnx_tensor("a", [], [0], ONNX_INT64),
             onnx_tensor("b", [], [1 << 62], ONNX_INT64),
             onnx_tensor("d", [], [1], ONNX_INT64)]), True),
        ("range-float-1e30", onnx_model(
            [onnx_node("Range", ["a", "b", "d"], ["y"])], [], [onnx_value("y", None)],
            [onnx_tensor("a", [], [0.0]), onnx_tensor("b", [], [1e30]),
             onnx_tensor("d", [], [1e-30])]), False),
        ("range-delta-0", onnx_model(
            [onnx_node("Range", ["a", "b", "d"], ["y"])], [],
            [onnx_value("y", None, ONNX_INT64)],
            [onnx_tensor("a", [], [0], ONNX_INT64), onnx_tensor("b", [], [5], ONNX_INT64),
             onnx_tensor("d", [], [0], ONNX_INT64)]), False),
        ("expand-10^18", onnx_model(
            [onnx_node("Expand", ["x", "s"], ["y"])], [onnx_value("x", [1])],
            [onnx_value("y", None)],
            [onnx_tensor("s", [3], [10 ** 6] * 3, ONNX_INT64)]), False),
        ("reshape-2^40", onnx_model(
            [onnx_node("Reshape", ["x", "s"], ["y"])], [onnx_value("x", [2, 3])],
            [onnx_value("y", None)],
            [onnx_tensor("s", [2], [1 << 20, 1 << 20], ONNX_INT64)]), False),
        ("concat-2^62", onnx_model(
            [onnx_node("Concat", ["x", "x"], ["y"], axis=0)],
            [onnx_value("x", [1 << 31, 1 << 31])], [onnx_value("y", None)]), False),
        ("split-sizes-wrong-sum", onnx_model(
            [onnx_node("Split", ["x", "s"], ["a", "b"], axis=1)],
            [onnx_value("x", [2, 6])], [onnx_value("a", None), onnx_value("b", None)],
            [onnx_tensor("s", [2], [2, 5], ONNX_INT64)]), False),
        ("split-negative-part", onnx_model(
            [onnx_node("Split", ["x", "s"], ["a", "b"], axis=1)],
            [onnx_value("x", [2, 6])], [onnx_value("a", None), onnx_value("b", None)],
            [onnx_tensor("s", [2], [8, -2], ONNX_INT64)]), False),
        ("trilu-rank-1", onnx_model(
            [onnx_node("Trilu", ["x"], ["y"])], [onnx_value("x", [6])],
            [onnx_value("y", None)]), False),
        ("trilu-upper-2", onnx_model(
            [onnx_node("Trilu", ["x"], ["y"], upper=2)], [onnx_value("x", [2, 3])],
            [onnx_value("y", None)]), False),
        ("layer-norm-axis-5", onnx_model(
            [onnx_node("LayerNormalization", ["x", "g"], ["y"], axis=5)],
            [onnx_value("x", [2, 3])], [onnx_value("y", None)],
            [onnx_tensor("g", [3], [1.0, 1.0, 1.0])]), False),
        ("old-opset-no-broadcast", onnx_model(
            [onnx_node("Mul", ["a", "b"], ["y"])],
            [onnx_value("a", [3, 3]), onnx_value("b", [3])], [onnx_value("y", None)],
            opset=6), True),
        ("folds-to-gigabytes", onnx_model(
            [onnx_node("ConstantOfShape", ["s"], ["c0"])] +
            [n for i in range(1, 40) for n in (
                onnx_node("ConstantOfShape", ["s"], ["k%d" % i]),
                onnx_node("Add", ["c%d" % (i - 1), "k%d" % i], ["c%d" % i]))] +
            [onnx_node("Add", ["x", "c39"], ["y"])],
            [onnx_value("x", [4096, 4096])], [onnx_value("y", None)],
            [onnx_tensor("s", [2], [4096, 4096], ONNX_INT64)]), True),
        ("dropout-training-for-inference", onnx_model(
            [onnx_node("Dropout", ["x", "r", "t"], ["y"])], [onnx_value("x", [2, 3])],
            [onnx_value("y", None)],
            [onnx_tensor("r", [], [0.5]), onnx_tensor("t", [], [1], 9)]), False),
    ]
    for name, model, key in sized:
        consumers(name, model, BAD, key=key)

    # Silent wrong answers: each runs and must agree with ONNX's semantics.
    a9 = [float(v) for v in range(9)]
    b3 = [1.0, 10.0, 100.0]
    rows = [a9[i] * b3[i // 3] for i in range(9)]
    tril = [v if (i % 3) <= (i // 3) else 0.0 for i, v in enumerate(a9)]
    triu1 = [v if (i % 3) - (i // 3) >= 1 else 0.0 for i, v in enumerate(a9)]
    ln_rows = []
    for r in range(2):
        row = a9[:6][r * 3:(r + 1) * 3] if False else [float(v) for v in
                                                        range(r * 3, r * 3 + 3)]
        mean = sum(row) / 3
        var = sum((v - mean) ** 2 for v in row) / 3
        ln_rows += [(v - mean) / math.sqrt(var + 1e-5) for v in row]
    flat6 = [float(v) for v in range(6)]
    mean6 = sum(flat6) / 6
    var6 = sum((v - mean6) ** 2 for v in flat6) / 6
    ln_all = [(v - mean6) / math.sqrt(var6 + 1e-5) for v in flat6]
    runs = [
        ("old-opset-broadcast-axis",
         onnx_model([onnx_node("Mul", ["a", "b"], ["y"], broadcast=1, axis=0)],
                    [onnx_value("a", [3, 3]), onnx_value("b", [3])],
                    [onnx_value("y", [3, 3])], opset=6),
         [("a", [3, 3], a9), ("b", [3], b3)], [("y", [3, 3], rows)], True),
        ("trilu-lower",
         onnx_model([onnx_node("Trilu", ["x"], ["y"], upper=0)],
                    [onnx_value("x", [3, 3])], [onnx_value("y", [3, 3])]),
         [("x", [3, 3], a9)], [("y", [3, 3], tril)], False),
        ("trilu-upper-k1-run-time-square",
         onnx_model([onnx_node("Shape", ["x"], ["s"]),
                     onnx_node("ConstantOfShape", ["s"], ["f"],
                               value=onnx_tensor("v", [1], [1.0])),
                     onnx_node("Mul", ["f", "x"], ["g"]),
                     onnx_node("Trilu", ["g", "k"], ["y"])],
                    [onnx_value("x", ["n", "n"])], [onnx_value("y", ["n", "n"])],
                    [onnx_tensor("k", [], [1], ONNX_INT64)]),
         [("x", [3, 3], a9)], [("y", [3, 3], triu1)], True),
        ("layer-norm-last-two-dims",
         onnx_model([onnx_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-2)],
                    [onnx_value("x", [1, 2, 3])], [onnx_value("y", [1, 2, 3])],
                    [onnx_tensor("g", [2, 3], [1.0] * 6),
                     onnx_tensor("b", [2, 3], [0.0] * 6)]),
         [("x", [1, 2, 3], flat6)], [("y", [1, 2, 3], ln_all)], False),
        ("layer-norm-last-dim",
         onnx_model([onnx_node("LayerNormalization", ["x", "g", "b"], ["y"])],
                    [onnx_value("x", [2, 3])], [onnx_value("y", [2, 3])],
                    [onnx_tensor("g", [3], [1.0] * 3), onnx_tensor("b", [3], [0.0] * 3)]),
         [("x", [2, 3], flat6)], [("y", [2, 3], ln_rows)], False),
        ("split-three",
         onnx_model([onnx_node("Split", ["x", "s"], ["a", "b", "c"], axis=1)],
                    [onnx_value("x", [2, 6])],
                    [onnx_value("a", [2, 1]), onnx_value("b", [2, 2]), onnx_value("c", [2, 3])],
                    [onnx_tensor("s", [3], [1, 2, 3], ONNX_INT64)]),
         [("x", [2, 6], [float(v) for v in range(12)])],
         [("a", [2, 1], [0.0, 6.0]), ("b", [2, 2], [1.0, 2.0, 7.0, 8.0]),
          ("c", [2, 3], [3.0, 4.0, 5.0, 9.0, 10.0, 11.0])], False),
    ]
    for name, model, ins, outs, key in runs:
        def build(ctx, model=model, ins=ins, outs=outs):
            onnx_test_folder(ctx, "t", model, ins, outs)
            return Spec(["loom", "onnx-test", "t", "--strict", "--rtol", "1e-4",
                         "--atol", "1e-5"], timeout=120,
                        check=lambda ctx, r: None if b"PASS t" in r.stdout
                        else "did not pass on both engines")
        add(name + "/onnx-test", "loom onnx-test: " + name, build, GOOD, key=key)

    # Damaged copies of a small valid model: a clean refusal or an import.
    base = onnx_model([onnx_node("MatMul", ["x", "w"], ["h"]),
                       onnx_node("Relu", ["h"], ["y"])],
                      [onnx_value("x", ["batch", 3])], [onnx_value("y", ["batch", 2])],
                      [onnx_tensor("w", [3, 2], [0.5, -1.0, 2.0, 0.25, 1.5, -0.5])])
    for i in range(30):
        data = damaged_bytes(rng, base, edits=3, cut=8, insert=4)

        def build(ctx, data=data):
            ctx.write("m.onnx", data)
            return Spec(["loom", "compile", "m.onnx", "--target", "cpu", "-o",
                         "out.loomx"], outputs=["out.loomx"], expect=EITHER)
        add("damaged-%02d/compile-cpu" % i, "loom compile on a damaged model",
            build, EITHER)
    return probes


# --------------------------------------------------------------------------
# Family: folder (what an exported translator folder and `loom export -o`
# may write)

def fam_folder(seed):
    probes = []

    def add(name, desc, build, expect, key=False):
        probes.append(Probe("folder", "folder/" + name, desc, build,
                            expect=expect, key=key))

    # Never into a folder that holds other files: another run's directory
    # (its checkpoints and metrics would be mixed with the export's).
    for name, setup, key in [
            ("another-run", lambda ctx: ctx.copy("modelB", "out"), True),
            ("user-files", lambda ctx: ctx.write("out/notes.txt", "mine\n"), False),
            ("only-a-config", lambda ctx: ctx.write("out/config.pbtxt", "d_model: 8\n"),
             False)]:
        def build(ctx, setup=setup):
            ctx.copy("modelA", "m")
            setup(ctx)
            return Spec(["loom", "export", "--model", "m", "-o", "out"],
                        caches=["m/translate.loomx"], expect=BAD)
        add("export-o-" + name, "loom export -o onto " + name, build, BAD, key=key)

    def over_export(ctx):
        ctx.copy("modelA", "m")
        ctx.copy("exportA", "out")
        return Spec(["loom", "export", "--model", "m", "-o", "out"],
                    outputs=["out"], caches=["m/translate.loomx"],
                    check=check_file("out/translate.loomx"))
    add("export-o-earlier-export", "loom export over an earlier export",
        over_export, GOOD)

    # `loom translate --model` on an exported folder must not replace the
    # decoder the folder ships.
    def translate_folder(ctx):
        ctx.copy("modelA", "m")
        made = ctx.run([ctx.tool("loom"), "export", "--model", "m", "-o", "f",
                        "--cpu", "x86-64-v2"], timeout=300)
        if made.rc != 0:
            raise RuntimeError("setup: loom export --cpu x86-64-v2 failed")
        shutil.rmtree(ctx.path("m"))
        return Spec(["loom", "translate", "--model", "f", "--threads", "1"],
                    stdin=b"alpha bravo\n", expect=GOOD, lenient=True)
    add("translate-exported-folder", "loom translate --model on an exported folder",
        translate_folder, GOOD, key=True)

    # A folder without lib/ fails by name, loading nothing from elsewhere.
    def no_lib(ctx):
        ctx.copy("exportA", "f")
        shutil.rmtree(ctx.path("f/lib"))
        return Spec([ctx.path("f/loom-translate")], stdin=b"alpha bravo\n",
                    expect=BAD, env={"LOOM_SENTENCEPIECE_SHIM": ""},
                    lenient=True)
    add("folder-without-lib", "an exported folder without lib/", no_lib, BAD, key=True)
    return probes


def register_all(seed, ir_dir=None):
    probes = []
    probes += fam_config(seed)
    probes += fam_weights(seed)
    probes += fam_executable(seed)
    probes += fam_ids(seed)
    probes += fam_text(seed)
    probes += fam_train(seed)
    probes += fam_cli(seed)
    probes += fam_average(seed)
    probes += fam_mlir(seed, ir_dir)
    probes += fam_modeldir(seed)
    probes += fam_bench(seed)
    probes += fam_plot(seed)
    probes += fam_onnx(seed)
    probes += fam_folder(seed)
    for p in probes:
        if not hasattr(p, "alone"):
            p.alone = False
    return probes


# --------------------------------------------------------------------------
# Running and classifying


class Runner:
    def __init__(self, bindir, mem_limit_mb):
        self.bindir = bindir
        self.mem_limit = mem_limit_mb * (1 << 20)

    def tool(self, name):
        if "/" in name:
            return name
        return os.path.join(self.bindir, name)

    def limits(self):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if self.mem_limit > 0:
            resource.setrlimit(resource.RLIMIT_AS,
                               (self.mem_limit, self.mem_limit))
        resource.setrlimit(resource.RLIMIT_FSIZE, (2 << 30, 2 << 30))

    def execute(self, argv, cwd, stdin, timeout, env):
        argv = list(argv)
        if argv and argv[0] in ("loom", "loom-opt", "loom-translate"):
            argv[0] = self.tool(argv[0])
        elif argv and "/" in argv[0] and not os.path.isabs(argv[0]):
            argv[0] = os.path.join(cwd, argv[0])
        full_env = dict(os.environ)
        full_env.update(env)
        r = Result()
        t0 = time.time()
        try:
            proc = subprocess.Popen(
                argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=full_env, preexec_fn=self.limits,
                start_new_session=True)
        except OSError as e:
            r.rc = 127
            r.stderr = ("probe: cannot start %s: %s" % (argv[0], e)).encode()
            return r
        try:
            r.stdout, r.stderr = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            r.timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                r.stdout, r.stderr = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                r.stdout, r.stderr = b"", b""
        except BrokenPipeError:
            r.stdout, r.stderr = proc.communicate()
        r.rc = proc.returncode
        r.seconds = time.time() - t0
        return r


def compare(before, after, spec, failed):
    """Problems of data: (kind, path) pairs."""
    allowed = spec.outputs + spec.caches
    problems = []
    for path, desc in before.items():
        if path not in after:
            if under(path, spec.caches) or (not failed and
                                            under(path, spec.outputs)):
                continue
            problems.append("removed '%s'" % path)
        elif after[path] != desc:
            if under(path, spec.caches) or (not failed and
                                            under(path, spec.outputs)):
                continue
            problems.append("changed '%s'" % path)
    for path in after:
        if path not in before and not under(path, allowed):
            # An ancestor that is itself new and allowed covers it.
            problems.append("created '%s' (not a declared output)" % path)
    return problems


def classify(probe, spec, r, data_problems, root_problems):
    """(class or None, [issues])"""
    expect = spec.expect or probe.expect
    issues = []
    err = r.stderr.decode("utf-8", "replace")
    cls = None
    if data_problems or root_problems:
        cls = "data-loss"
        issues += data_problems[:8] + root_problems
    crashed = (r.rc is not None and (r.rc < 0 or r.rc >= 128)) or \
        bool(CRASH_PATTERNS.search(err))
    if r.timed_out:
        issues.append("no exit within the time limit")
        cls = cls or "hang"
        return cls, issues
    if crashed:
        if r.rc is not None and r.rc < 0:
            try:
                issues.append("killed by %s" % signal.Signals(-r.rc).name)
            except ValueError:
                issues.append("killed by signal %d" % -r.rc)
        else:
            m = CRASH_PATTERNS.search(err)
            issues.append("exit %s%s" % (r.rc, ", stderr: " + m.group(0)
                                         if m else ""))
        cls = cls or "crash"
        return cls, issues
    if r.rc == 0:
        if expect == BAD:
            issues.append("exit 0 on bad input")
            cls = cls or "silent-wrong"
        elif spec.check is not None:
            problem = None
            try:
                problem = spec.check(Ctx(r.work, r.fx, r.runner), r)
            except Exception as e:  # noqa: BLE001
                problem = "the check failed: %r" % e
            if problem:
                issues.append(problem)
                cls = cls or "silent-wrong"
        if cls is None and ERROR_WORD.search(err) and not spec.lenient:
            issues.append("exit 0 but stderr says error")
            cls = "unclear"
        return cls, issues
    # A refusal.
    if expect == GOOD:
        issues.append("exit %d on valid input" % r.rc)
        cls = cls or "refused"
    if not ERROR_LINE.search(err):
        issues.append("exit %d without an 'error:' line" % r.rc)
        cls = cls or "unclear"
    elif not spec.lenient:
        lines = [l for l in err.split("\n") if l.strip() and
                 not re.search(r"(^|: )(note|warning): ", l)]
        if len(lines) > 3:
            issues.append("%d lines on stderr" % len(lines))
            cls = cls or "unclear"
        elif any(len(l) > 2000 for l in lines):
            issues.append("an error line of %d chars" %
                          max(len(l) for l in lines))
            cls = cls or "unclear"
    return cls, issues


class Harness:
    def __init__(self, args):
        self.args = args
        self.runner = Runner(args.bin, args.mem_limit_mb)
        self.lock = threading.Lock()
        self.done = 0
        self.results = []

    def log(self, msg):
        with self.lock:
            print(msg, flush=True)

    def run_one(self, probe, work_root, fx, index, total):
        work = tempfile.mkdtemp(prefix="p%05d-" % index, dir=work_root)
        ctx = Ctx(work, fx, self.runner)
        try:
            spec = probe.build(ctx)
        except Exception as e:  # noqa: BLE001
            shutil.rmtree(work, ignore_errors=True)
            raise RuntimeError("probe %s: setup failed: %r" % (probe.name, e))
        if self.args.keep_failed:
            pristine = tempfile.mkdtemp(prefix="pristine-", dir=work_root)
            shutil.rmtree(pristine)
            shutil.copytree(work, pristine, symlinks=True)
        before = snapshot(work)
        root_before = None
        if spec.watch_root:
            root_before = {d: set(os.listdir(d)) for d in WATCHED_DIRS
                           if os.path.isdir(d)}
        timeout = spec.timeout or self.args.timeout
        r = self.runner.execute(spec.argv, work, spec.stdin, timeout, spec.env)
        r.work, r.fx, r.runner = work, fx, self.runner
        after = snapshot(work)
        data = compare(before, after, spec, failed=(r.rc != 0))
        root_problems = []
        for d, names in (root_before or {}).items():
            for name in sorted(set(os.listdir(d)) - names):
                target = os.path.join(d, name)
                root_problems.append("created '%s' outside the work "
                                     "directory" % target)
                if name in LOOM_OUTPUT_NAMES:
                    if os.path.isdir(target) and not os.path.islink(target):
                        shutil.rmtree(target, ignore_errors=True)
                    else:
                        try:
                            os.unlink(target)
                        except OSError:
                            pass
        cls, issues = classify(probe, spec, r, data, root_problems)
        record = {
            "family": probe.family, "name": probe.name, "class": cls or "ok",
            "desc": probe.desc, "expect": spec.expect or probe.expect,
            "argv": spec.argv, "rc": r.rc, "seconds": round(r.seconds, 2),
            "issues": issues,
            "stderr": excerpt(r.stderr, 2500), "stdout": excerpt(r.stdout, 300),
        }
        if cls and self.args.keep_failed:
            dest = os.path.join(self.args.keep_failed,
                                re.sub(r"[^A-Za-z0-9_.=-]+", "_", probe.name))
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(pristine, dest, symlinks=True)
            record["kept"] = dest
        if self.args.keep_failed:
            shutil.rmtree(pristine, ignore_errors=True)
        for dirpath, dirnames, _ in os.walk(work):
            for d in dirnames:
                try:
                    os.chmod(os.path.join(dirpath, d), 0o755)
                except OSError:
                    pass
        shutil.rmtree(work, ignore_errors=True)
        with self.lock:
            self.done += 1
            self.results.append(record)
            if cls:
                print("[%d/%d] %-12s %s: %s" % (self.done, total, cls,
                                                probe.name, "; ".join(issues)),
                      flush=True)
            elif self.args.verbose:
                print("[%d/%d] ok           %s (%.1fs)" % (
                    self.done, total, probe.name, r.seconds), flush=True)
            elif self.done % 100 == 0:
                print("[%d/%d] ..." % (self.done, total), flush=True)
        return record

    def main(self):
        args = self.args
        probes = register_all(args.seed)
        if args.families:
            wanted = set(args.families.split(","))
            unknown = wanted - set(FAMILIES)
            if unknown:
                raise SystemExit("probe: unknown families: %s (the families "
                                 "are %s)" % (", ".join(sorted(unknown)),
                                              ", ".join(FAMILIES)))
            probes = [p for p in probes if p.family in wanted]
        if args.only:
            rx = re.compile(args.only)
            probes = [p for p in probes if rx.search(p.name)]
        if args.quick:
            probes = quick_subset(probes, args.seed)
        names = [p.name for p in probes]
        if len(names) != len(set(names)):
            dup = sorted(n for n in set(names) if names.count(n) > 1)
            raise SystemExit("probe: duplicate probe names: %s" % dup[:5])
        if args.list:
            for p in probes:
                print("%-10s %s  -- %s" % (p.family, p.name, p.desc))
            print("%d probes" % len(probes))
            return 0
        for tool in ("loom", "loom-opt", "loom-translate"):
            if not os.access(self.runner.tool(tool), os.X_OK):
                raise SystemExit("probe: no executable %s in %s (give --bin)"
                                 % (tool, args.bin))
        top = tempfile.mkdtemp(prefix="loom-probe-", dir=args.tmp)
        try:
            fx = Fixtures(os.path.join(top, "fixtures"), self.runner, self.log)
            fx.build()
            work_root = os.path.join(top, "work")
            os.makedirs(work_root)
            # Probes that may write into the root run alone, at the end.
            alone = [p for p in probes if getattr(p, "alone", False)]
            together = [p for p in probes if not getattr(p, "alone", False)]
            total = len(probes)
            self.log("running %d probes with %d jobs, %ss per probe" % (
                total, args.jobs, args.timeout))
            t0 = time.time()
            with ThreadPoolExecutor(max_workers=args.jobs) as pool:
                futures = [pool.submit(self.run_one, p, work_root, fx, i, total)
                           for i, p in enumerate(together)]
                for f in futures:
                    f.result()
            for i, p in enumerate(alone):
                self.run_one(p, work_root, fx, len(together) + i, total)
            elapsed = time.time() - t0
        finally:
            if not args.keep_tmp:
                shutil.rmtree(top, ignore_errors=True)
            else:
                self.log("kept %s" % top)
        return self.report(elapsed)

    def report(self, elapsed):
        args = self.args
        by_family = {}
        for r in self.results:
            row = by_family.setdefault(r["family"], {c: 0 for c in
                                                     ["probes", "ok"] + CLASSES})
            row["probes"] += 1
            row[r["class"]] += 1
        cols = ["probes", "ok"] + CLASSES
        print()
        print("%-11s" % "family" + "".join("%13s" % c for c in cols))
        total = {c: 0 for c in cols}
        for fam in FAMILIES:
            if fam not in by_family:
                continue
            row = by_family[fam]
            for c in cols:
                total[c] += row[c]
            print("%-11s" % fam + "".join("%13d" % row[c] for c in cols))
        print("%-11s" % "total" + "".join("%13d" % total[c] for c in cols))
        print("%.0fs" % elapsed)
        bad = [r for r in self.results if r["class"] != "ok"]
        if args.report:
            with open(args.report, "w") as f:
                for r in sorted(bad, key=lambda r: (CLASSES.index(r["class"]),
                                                     r["family"], r["name"])):
                    f.write(json.dumps(r, sort_keys=True) + "\n")
            print("report: %d non-OK probes in %s" % (len(bad), args.report))
        return 1 if bad else 0


def quick_subset(probes, seed):
    """About 150 probes: every key reproducer, then a sample per family that
    avoids the slow ones."""
    rng = random.Random("quick:%s" % seed)
    chosen = [p for p in probes if p.key]
    per_family = {"config": 16, "weights": 16, "executable": 10, "ids": 10,
                  "text": 12, "train": 6, "cli": 28, "average": 6, "mlir": 18,
                  "modeldir": 6, "bench": 2, "plot": 12, "onnx": 10,
                  "folder": 2}
    taken = set(p.name for p in chosen)
    for fam, n in per_family.items():
        pool = [p for p in probes if p.family == fam and p.name not in taken
                and not p.slow]
        rng.shuffle(pool)
        chosen += pool[:n]
    order = {p.name: i for i, p in enumerate(probes)}
    return sorted(chosen, key=lambda p: order[p.name])


def main():
    ap = argparse.ArgumentParser(
        description="Run hostile-input probes against the loom tools.")
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "bin"),
                    help="directory holding loom, loom-opt, loom-translate "
                         "(default: build/bin of this checkout)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true",
                    help="about 150 probes (a few minutes on 2 cores)")
    ap.add_argument("--families", help="comma-separated: " + ",".join(FAMILIES))
    ap.add_argument("--only", help="run the probes whose name matches this "
                                   "regular expression")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per probe before it counts as a hang "
                         "(default 60; 20 with --quick)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--report", help="write every non-OK probe as JSON lines")
    ap.add_argument("--mem-limit-mb", type=int, default=4096,
                    help="address-space limit per run (0: none)")
    ap.add_argument("--tmp", default=None,
                    help="where to make the temporary directory")
    ap.add_argument("--keep-tmp", action="store_true",
                    help="keep the fixtures and work directories")
    ap.add_argument("--keep-failed", metavar="DIR",
                    help="copy the work directory of each non-OK probe, as "
                         "it was before the run, into DIR")
    ap.add_argument("--list", action="store_true",
                    help="list the probes and exit")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if args.timeout is None:
        args.timeout = 20.0 if args.quick else 60.0
    args.bin = os.path.abspath(args.bin)
    if args.keep_failed:
        args.keep_failed = os.path.abspath(args.keep_failed)
        os.makedirs(args.keep_failed, exist_ok=True)
    sys.exit(Harness(args).main())


if __name__ == "__main__":
    main()
