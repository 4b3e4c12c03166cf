#!/usr/bin/env python3
"""Fuzzes the metrics reader of `loom plot` (tools/loom/loom-plot.py's
parse_metrics) with mutated metrics.jsonl files.

    fuzz/plot_fuzz.py [--runs N] [--seed S] [--corpus DIR] [--crash-dir DIR]
                      [--script loom-plot.py] [--max-total-time SECONDS]

The reader must turn any bytes into records or a PlotError with a one-line
message naming the file; anything else (another exception, a message of
several lines, records of unequal lengths or holding infinities) is a
finding: the input is written to --crash-dir and the exit status is 1.
Inputs are the seeds of fuzz/corpus/plot, mutated deterministically from
--seed (bytes flipped, inserted, deleted and duplicated; splices of two
inputs; numbers replaced by huge ones, booleans, strings, lists; deep
nesting; bytes that are not UTF-8; long lines). Inputs that are read
without an error join a small pool that later mutations start from.

The line limit is lowered to LINE_LIMIT bytes here so that an input that
crosses it stays small; everything else runs as `loom plot` runs it.
Python's own parts (json, float) are pure Python or C without memory
errors to find: this looks for the reader's unhandled cases, so a plain
mutation loop without coverage feedback covers them, a million inputs in
about a minute. `make fuzz` runs it as its target `plot`
(scripts/run-fuzzers.sh).
"""

import argparse
import hashlib
import importlib.util
import math
import os
import random
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Above Python's int-string limit (4300 digits), so that an int that long
# reaches json, and small enough that inputs stay a few KB.
LINE_LIMIT = 8192
MAX_INPUT = 3 * LINE_LIMIT
POOL_SIZE = 256

# What replaces a number or is inserted: the values the reader must refuse
# or turn into a gap.
VALUES = [
    b"null", b"true", b"false", b'"x"', b'""', b"[]", b"[1]", b"{}", b'{"a": 1}',
    b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-1e999", b"1e308", b"-1e308",
    b"1.7976931348623157e308", b"5e-324", b"1e-999", b"-0", b"0", b"1e100", b"1e101",
    b"9" * 400, b"9" * 4400, b"-" + b"9" * 4400, b"1" + b"0" * 310, b"0." + b"0" * 400 + b"1",
    b"1e" + b"9" * 30, b"9223372036854775808", b"-9223372036854775809", b"0x10", b"1_000",
    b"01", b"+1", b".5", b"1.", b"--1", b"\"\\ud800\"", b"\"\\u0000\"",
]
# Bytes that are not UTF-8 or that the reader treats specially.
SPECIAL = [
    b"\xff", b"\xfe", b"\xc3", b"\xc3\x28", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
    b"\xc0\xaf", b"\xef\xbb\xbf", b"\x00", b"\r", b"\n", b"\r\n", b"\t", b"\x0b", b"\x1c",
    b"\x85", b"\xe2\x80\xa8", b"\xc2\xa0", b"\"", b"\\", b"{", b"}", b"[", b"]", b",", b":",
]
FIELDS = [b'"type"', b'"train"', b'"valid"', b'"step"', b'"elapsed_s"', b'"loss"', b'"lr"',
          b'"tokens_per_s"', b'"valid_nll"', b'"valid_bleu"', b'"checkpoint"']


def load_plot(script):
    """loom-plot.py as a module, without drawing (matplotlib is not
    imported until a figure is drawn)."""
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    spec = importlib.util.spec_from_file_location("loom_plot", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Mutator:
    def __init__(self, rng, seeds):
        self.rng = rng
        self.seeds = seeds
        self.pool = []
        self.operators = [
            (self.flip_bit, 6), (self.set_byte, 6), (self.insert_bytes, 6),
            (self.delete_range, 6), (self.duplicate_range, 3), (self.splice, 3),
            (self.replace_number, 12), (self.insert_value, 6), (self.insert_special, 6),
            (self.insert_field, 3), (self.swap_lines, 2), (self.drop_line_end, 2),
            (self.deep_nesting, 1), (self.long_line, 1), (self.truncate, 2),
        ]
        self.weights = []
        total = 0
        for _, weight in self.operators:
            total += weight
            self.weights.append(total)

    def pick(self):
        rng = self.rng
        if self.pool and rng.random() < 0.3:
            return rng.choice(self.pool)
        return rng.choice(self.seeds)

    def remember(self, data):
        """Keeps an input that was read without an error as a start."""
        if len(data) > 4096:
            return
        if len(self.pool) < POOL_SIZE:
            self.pool.append(data)
        else:
            self.pool[self.rng.randrange(POOL_SIZE)] = data

    def mutate(self, data):
        rng = self.rng
        for _ in range(1 + rng.randrange(4)):
            at = rng.random() * self.weights[-1]
            for (operator, _), limit in zip(self.operators, self.weights):
                if at < limit:
                    data = operator(data)
                    break
        return data[:MAX_INPUT]

    def position(self, data):
        return self.rng.randrange(len(data) + 1)

    def flip_bit(self, data):
        if not data:
            return data
        i = self.rng.randrange(len(data))
        return data[:i] + bytes([data[i] ^ (1 << self.rng.randrange(8))]) + data[i + 1:]

    def set_byte(self, data):
        if not data:
            return data
        i = self.rng.randrange(len(data))
        return data[:i] + bytes([self.rng.randrange(256)]) + data[i + 1:]

    def insert_bytes(self, data):
        i = self.position(data)
        return data[:i] + random_bytes(self.rng, 1 + self.rng.randrange(8)) + data[i:]

    def delete_range(self, data):
        if not data:
            return data
        i = self.rng.randrange(len(data))
        return data[:i] + data[i + 1 + self.rng.randrange(32):]

    def duplicate_range(self, data):
        if not data:
            return data
        i = self.rng.randrange(len(data))
        j = min(len(data), i + 1 + self.rng.randrange(256))
        k = self.position(data)
        return data[:k] + data[i:j] + data[k:]

    def splice(self, data):
        other = self.pick()
        return data[:self.position(data)] + other[self.position(other):]

    def replace_number(self, data):
        """A number (a run of digits, sign, dot, exponent) replaced."""
        if not data:
            return data
        start = self.rng.randrange(len(data))
        digits = b"0123456789"
        i = data.find(b":", start)
        if i < 0:
            i = data.find(b":")
            if i < 0:
                return self.insert_value(data)
        i += 1
        while i < len(data) and data[i] == 32:
            i += 1
        j = i
        while j < len(data) and (data[j] in digits or data[j] in b"+-.eE"):
            j += 1
        return data[:i] + self.rng.choice(VALUES) + data[j:]

    def insert_value(self, data):
        i = self.position(data)
        return data[:i] + self.rng.choice(VALUES) + data[i:]

    def insert_special(self, data):
        i = self.position(data)
        return data[:i] + self.rng.choice(SPECIAL) + data[i:]

    def insert_field(self, data):
        i = self.position(data)
        return data[:i] + self.rng.choice(FIELDS) + data[i:]

    def swap_lines(self, data):
        lines = data.split(b"\n")
        if len(lines) < 2:
            return data
        i, j = self.rng.randrange(len(lines)), self.rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines)

    def drop_line_end(self, data):
        return data.rstrip(b"\r\n")

    def deep_nesting(self, data):
        """Deeper than Python's recursion limit, within the line limit."""
        opener, closer = self.rng.choice([(b"[", b"]"), (b'{"a":', b"}"), (b'[{"b":', b"}]")])
        depth = (1000 + self.rng.randrange(LINE_LIMIT // 2 - 1000)) // len(opener)
        nested = opener * depth
        if self.rng.random() < 0.5:  # closed, as valid JSON
            nested += b"1" + closer * depth
        return nested[:LINE_LIMIT - 1] + b"\n" + data

    def long_line(self, data):
        """A line just over or under the limit."""
        length = LINE_LIMIT + self.rng.randrange(-2, 3)
        i = self.position(data)
        return data[:i] + b"x" * length + data[i:]

    def truncate(self, data):
        return data[:self.position(data)]


def random_bytes(rng, n):
    return bytes(rng.randrange(256) for _ in range(n))


def check_records(plot, result):
    """What parse_metrics returns: (train, valid), columns of one length,
    floats that are finite or NaN and within the magnitude an axis holds."""
    train, valid = result
    if list(train) != list(plot.TRAIN_FIELDS) or list(valid) != list(plot.VALID_FIELDS):
        return "the columns are %s and %s" % (list(train), list(valid))
    for columns in (train, valid):
        lengths = {len(v) for v in columns.values()}
        if len(lengths) != 1:
            return "columns of different lengths %s" % sorted(lengths)
        for name, values in columns.items():
            for v in values:
                if type(v) is not float or not (math.isnan(v) or abs(v) <= plot.MAX_MAGNITUDE):
                    return "%s holds %r" % (name, v)
    if not train["step"] and not valid["step"]:
        return "no records and no error"
    return None


def check_message(message):
    if not message.startswith("fuzz"):
        return "the message does not name the file: %r" % message[:200]
    if not message.isprintable():
        return "the message is not one printable line: %r" % message[:200]
    if len(message) > 400:
        return "a message of %d characters" % len(message)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000000, help="inputs to try")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--corpus", default=os.path.join(ROOT, "fuzz", "corpus", "plot"))
    parser.add_argument("--crash-dir", default="plot-fuzz-crashes",
                        help="where an input that breaks the reader is written")
    parser.add_argument("--script", default=os.path.join(ROOT, "tools", "loom", "loom-plot.py"))
    parser.add_argument("--max-total-time", type=float, default=0,
                        help="stop after this many seconds (0: after --runs)")
    args = parser.parse_args()

    plot = load_plot(args.script)
    plot.MAX_LINE_BYTES = LINE_LIMIT
    seeds = []
    for name in sorted(os.listdir(args.corpus)):
        with open(os.path.join(args.corpus, name), "rb") as f:
            seeds.append(f.read())
    if not seeds:
        sys.exit("plot_fuzz: no seeds in %s" % args.corpus)
    rng = random.Random(args.seed)
    mutator = Mutator(rng, seeds)
    parse, PlotError = plot.parse_metrics, plot.PlotError
    refused = accepted = executions = 0
    start = time.monotonic()
    deadline = start + args.max_total_time if args.max_total_time > 0 else None
    # The seeds as they are, then mutants.
    inputs = iter(seeds)
    while executions < args.runs:
        data = next(inputs, None)
        if data is None:
            data = mutator.mutate(mutator.pick())
        executions += 1
        problem = None
        try:
            result = parse(data, "fuzz")
        except PlotError as e:
            refused += 1
            problem = check_message(str(e))
        except Exception:  # noqa: BLE001 - any other exception is the finding
            problem = traceback.format_exc()
        else:
            accepted += 1
            problem = check_records(plot, result)
            if problem is None:
                mutator.remember(data)
        if problem is not None:
            os.makedirs(args.crash_dir, exist_ok=True)
            path = os.path.join(args.crash_dir,
                                "crash-" + hashlib.sha1(data).hexdigest() + ".jsonl")
            with open(path, "wb") as f:
                f.write(data)
            print("plot_fuzz: execution %d (seed %d): %s\nplot_fuzz: the input is in %s"
                  % (executions, args.seed, problem.rstrip(), path), file=sys.stderr)
            print("stat::number_of_executed_units: %d" % executions)
            return 1
        if deadline is not None and executions % 1000 == 0 and time.monotonic() > deadline:
            break
    elapsed = time.monotonic() - start
    print("plot_fuzz: %d executions in %.1f s (%.0f/s), seed %d: %d read, %d refused, "
          "no finding" % (executions, elapsed, executions / max(elapsed, 1e-9), args.seed,
                          accepted, refused))
    print("stat::number_of_executed_units: %d" % executions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
