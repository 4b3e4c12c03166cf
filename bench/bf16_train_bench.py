#!/usr/bin/env python3
"""Times a training step in fp32 and in bf16, Loom and PyTorch, in one run.

Usage: bench/bf16_train_bench.py [--preset base] [--batch 32] [--src-len 30]
           [--tgt-len 30] [--threads 2] [--steps 10] [--warmup 3]
           [--rounds 2] [--loom build/bin/loom] [--python /usr/bin/python3]
           [--emulate] [--out bf16-train.jsonl]

Four programs at the CPU benchmark's shapes, alternated for --rounds rounds
so that a drift of the machine touches all of them alike:
  loom bench train --precision fp32 | bf16   (bf16: loom-mixed-precision)
  bench/pytorch_bench.py train --precision fp32 | bf16   (CPU bf16 autocast)
It prints a Markdown table of the median tokens/s and the peak resident
memory of each, and bf16's speed-up over fp32 for both.

bf16 needs a CPU with AVX512-BF16: elsewhere Loom refuses the executable and
this script stops, unless --emulate (LOOM_CPU_EMULATE_BF16=1: the products
widened to f32, the same values at less than fp32's speed), whose figures say
what emulation costs and nothing about bf16 units.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys


def cpu_has_bf16():
    try:
        with open("/proc/cpuinfo") as f:
            return "avx512_bf16" in f.read()
    except OSError:
        return False


def run(command, env):
    p = subprocess.run(command, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"error: {' '.join(command)} failed:\n{p.stderr.strip()}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="base")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--src-len", type=int, default=30)
    ap.add_argument("--tgt-len", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--loom", default="build/bin/loom")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--emulate", action="store_true",
                    help="run bf16 without AVX512-BF16 (LOOM_CPU_EMULATE_BF16)")
    ap.add_argument("--out", default="bf16-train.jsonl")
    a = ap.parse_args()

    native = cpu_has_bf16()
    if not native and not a.emulate:
        sys.exit("error: this CPU has no AVX512-BF16, so Loom refuses bf16 "
                 "executables; --emulate times the emulation instead")
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads),
               OPENBLAS_NUM_THREADS=str(a.threads))
    if a.emulate:
        env["LOOM_CPU_EMULATE_BF16"] = "1"
    shape = ["--preset", a.preset, "--batch", str(a.batch), "--src-len",
             str(a.src_len), "--tgt-len", str(a.tgt_len), "--threads",
             str(a.threads), "--steps", str(a.steps), "--warmup",
             str(a.warmup)]
    here = os.path.dirname(os.path.abspath(__file__))
    commands = {}
    for precision in ("fp32", "bf16"):
        commands[("loom", precision)] = [a.loom, "bench", "train"] + shape + [
            "--precision", precision]
        commands[("pytorch", precision)] = [
            a.python, os.path.join(here, "pytorch_bench.py"), "train"
        ] + shape + ["--precision", precision]

    results = {key: [] for key in commands}
    with open(a.out, "w") as out:
        for _ in range(a.rounds):
            for key, command in commands.items():
                record = run(command, env)
                results[key].append(record)
                out.write(json.dumps({"source": "/".join(key),
                                      "command": " ".join(command),
                                      "emulated": a.emulate and not native,
                                      "result": record}) + "\n")

    def median(key, field):
        return statistics.median(r[field] for r in results[key])

    print(f"{a.preset}, batch {a.batch} x {a.src_len}/{a.tgt_len} tokens, "
          f"{a.threads} threads, {a.rounds} rounds of {a.steps} steps"
          + ("" if native else " (bf16 EMULATED: no AVX512-BF16 here)"))
    print("| | fp32 tok/s | bf16 tok/s | bf16 / fp32 | fp32 peak RSS | "
          "bf16 peak RSS |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for engine in ("loom", "pytorch"):
        f32 = median((engine, "fp32"), "tokens_per_s")
        b16 = median((engine, "bf16"), "tokens_per_s")
        m32 = median((engine, "fp32"), "peak_rss_bytes") / 2**20
        m16 = median((engine, "bf16"), "peak_rss_bytes") / 2**20
        print(f"| {engine} | {f32:,.0f} | {b16:,.0f} | {b16 / f32:.2f}x | "
              f"{m32:,.0f} MiB | {m16:,.0f} MiB |")
    loom16 = median(("loom", "bf16"), "tokens_per_s")
    torch16 = median(("pytorch", "bf16"), "tokens_per_s")
    print(f"Loom bf16 / PyTorch bf16 autocast: {loom16 / torch16:.2f}x")
    for key, command in commands.items():
        print(f"  {'/'.join(key)}: {' '.join(command)}")


if __name__ == "__main__":
    main()
