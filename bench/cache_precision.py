#!/usr/bin/python3
"""The decoder's attention caches in bf16 against f32, the products alike.

    bench/cache_precision.py [--presets multi30k base] [--beams 1 4]
        [--batch 32] [--rounds 3] [--threads 2] [--loom build/bin/loom]

For each preset and beam, `loom bench decode --cache-precision fp32` and
`--cache-precision bf16` (fp32 products both: the caches' width apart from
the products') run in turns, --rounds times each, with --profile. Per
setting it prints the median tokens/s, the milliseconds per batch of the
attention kernels (self and cross) and of the concats that append a
position to the self-attention caches, and the peak resident memory, as a
Markdown table. Nothing else should run on the machine meanwhile.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(loom, preset, beam, batch, threads, caches):
    cmd = [loom, "bench", "decode", "--preset", preset, "--batch", str(batch),
           "--beam", str(beam), "--cache-precision", caches, "--threads",
           str(threads), "--steps", "3", "--warmup", "1", "--profile"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit("cache_precision.py: %s failed:\n%s" %
                 (" ".join(cmd), proc.stderr))
    record, attention, concat = None, 0.0, 0.0
    for line in (proc.stdout + proc.stderr).splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            continue
        parts = line.split()
        # "attention.5   180   84.78   3.8%": kernel, calls, ms per step
        if len(parts) >= 3 and parts[0].startswith("attention."):
            attention += float(parts[2])
        if len(parts) >= 3 and parts[0].startswith("concat."):
            concat += float(parts[2])
    if record is None:
        sys.exit("cache_precision.py: no record from " + " ".join(cmd))
    return {"tokens_per_s": record["tokens_per_s"], "attention_ms": attention,
            "concat_ms": concat, "peak_rss_mb": record["peak_rss_bytes"] / 1e6}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--presets", nargs="+", default=["multi30k", "base"])
    parser.add_argument("--beams", nargs="+", type=int, default=[1, 4])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--loom", default=os.path.join(ROOT, "build/bin/loom"))
    args = parser.parse_args()

    print("| preset | beam | caches | tokens/s | attention ms | concat ms "
          "| peak RSS MB |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
    for preset in args.presets:
        for beam in args.beams:
            runs = {"fp32": [], "bf16": []}
            for _ in range(args.rounds):
                for caches in runs:
                    runs[caches].append(run(args.loom, preset, beam,
                                            args.batch, args.threads, caches))
            for caches, results in runs.items():
                med = {k: statistics.median(r[k] for r in results)
                       for k in results[0]}
                print("| %s | %d | %s | %.0f | %.1f | %.1f | %.0f |" %
                      (preset, beam, caches, med["tokens_per_s"],
                       med["attention_ms"], med["concat_ms"],
                       med["peak_rss_mb"]), flush=True)


if __name__ == "__main__":
    main()
