#!/usr/bin/python3
"""Loom beside CTranslate2 on trained models translating real sentences.

    bench/real_models.py --data DATA_DIR --models MODELS_DIR
        [--names multi30k small base] [--runs 3] [--latency-sentences 200]
        [--batches 1 8 32] [--beams 1 4] [--precisions fp32 int8 [bf16]]
        [--threads 1 2 2w] [--loom build/bin/loom] > records.jsonl

MODELS_DIR/NAME is a Loom model directory (bench/real_models_train.sh trains
them). For each model:

  1. bench/ct2_convert.py converts it to MODELS_DIR/NAME.ct2, the same
     weights as a CTranslate2 model;
  2. equivalence: both translate DATA_DIR/val.en greedily in float32, and
     the translations must be identical line for line (a mismatch stops the
     benchmark: the two engines would not be computing the same function);
  3. every cell (batch, beam, precision, threads) translates the same input
     in both engines, each process timing --runs translations after one
     untimed one (`loom translate --time-runs`, bench/ct2_translate.py
     --time-runs): val.en whole for batches of 8 and more, its first
     --latency-sentences lines for batch 1. Both rank hypotheses by
     log-probability alone (Loom --alpha 0, CTranslate2 length_penalty 0),
     limit each sentence to 1.5 * its tokens + 1, and batch sentences sorted
     by length. BLEU (`loom score`, against val.de) is scored on both
     outputs.

A thread count N runs one decoder on N threads; Nw runs N decoders of one
thread each, translating batches side by side (`loom translate --workers N`,
CTranslate2's inter_threads through bench/ct2_translate.py --workers N).
Loom's precisions fp32 and int8 face CTranslate2's float32 and int8; bf16
(on a CPU with AVX512-BF16) faces float32, CTranslate2 having no CPU bf16. Every
record is one JSON line on stdout; the table on stderr gives per cell each
engine's target tokens/s at each thread count and Loom's speed over
CTranslate2's at its best thread count, from the median run's seconds.
Nothing else should run on the machine meanwhile.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
# CTranslate2 has no bf16 on the CPU (its bfloat16 is CUDA's): Loom's bf16
# (products and caches) faces its float32.
CT2_TYPE = {"fp32": "float32", "int8": "int8", "bf16": "float32"}


def run(cmd, out_path, timed=True):
    """Runs cmd with stdout to out_path; returns the JSON line on stderr
    when `timed`."""
    with open(out_path, "w") as out:
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE,
                              text=True)
    if proc.returncode != 0:
        sys.exit("real_models.py: %s failed:\n%s" % (" ".join(cmd),
                                                     proc.stderr))
    if not timed:
        return None
    for line in reversed(proc.stderr.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    sys.exit("real_models.py: no timing record from %s:\n%s" %
             (" ".join(cmd), proc.stderr))


def bleu(loom, hyp, ref):
    out = subprocess.run([loom, "score", "--ref", ref, "--input", hyp],
                         capture_output=True, text=True, check=True).stdout
    # "BLEU = 40.80 72.1/48.3/... (BP = ...)"
    return float(out.split()[2])


def threads_and_workers(config):
    """'2' is 2 threads in one decoder, '2w' 2 decoders of one thread."""
    config = str(config)
    if config.endswith("w"):
        n = int(config[:-1])
        return n, n
    return int(config), 1


def loom_cmd(a, model, inp, batch, beam, precision, config, runs):
    threads, workers = threads_and_workers(config)
    return [a.loom, "translate", "--model", model, "--input", inp,
            "--batch", str(batch), "--beam", str(beam), "--alpha", "0",
            "--precision", precision, "--threads", str(threads),
            "--workers", str(workers), "--time-runs", str(runs)]


def ct2_cmd(model, spm, inp, batch, beam, precision, config, runs):
    threads, workers = threads_and_workers(config)
    return [PY, os.path.join(ROOT, "bench", "ct2_translate.py"),
            "--model", model, "--spm", spm, "--input", inp,
            "--batch", str(batch), "--beam", str(beam),
            "--compute-type", CT2_TYPE[precision], "--threads", str(threads),
            "--workers", str(workers),
            "--length-penalty", "0", "--time-runs", str(runs)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--models", required=True)
    p.add_argument("--names", nargs="+", default=["multi30k", "small", "base"])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--latency-sentences", type=int, default=200)
    p.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    p.add_argument("--beams", type=int, nargs="+", default=[1, 4])
    p.add_argument("--precisions", nargs="+", default=["fp32", "int8"])
    p.add_argument("--threads", nargs="+", default=["1", "2", "2w"])
    p.add_argument("--loom", default=os.path.join(ROOT, "build", "bin", "loom"))
    a = p.parse_args()

    src = os.path.join(a.data, "val.en")
    ref = os.path.join(a.data, "val.de")
    work = tempfile.mkdtemp(prefix="real-models-")
    with open(src) as f:
        lines = f.readlines()
    short_src = os.path.join(work, "val.head.en")
    short_ref = os.path.join(work, "val.head.de")
    with open(short_src, "w") as f:
        f.writelines(lines[:a.latency_sentences])
    with open(ref) as f, open(short_ref, "w") as g:
        g.writelines(f.readlines()[:a.latency_sentences])

    records = []
    for name in a.names:
        model = os.path.join(a.models, name)
        ct2 = model + ".ct2"
        spm = os.path.join(model, "spm.model")
        if not os.path.exists(os.path.join(ct2, "model.bin")):
            subprocess.run([PY, os.path.join(ROOT, "bench", "ct2_convert.py"),
                            "--model", model, "--out", ct2], check=True)
        # 2. The same function: identical greedy translations of val.
        mine, theirs = (os.path.join(work, name + ".check." + s)
                        for s in ("loom", "ct2"))
        run(loom_cmd(a, model, src, 32, 1, "fp32", 2, 0), mine, timed=False)
        run(ct2_cmd(ct2, spm, src, 32, 1, "fp32", 2, 0), theirs, timed=False)
        with open(mine) as f, open(theirs) as g:
            pairs = list(zip(f.read().splitlines(), g.read().splitlines()))
        differ = [i + 1 for i, (x, y) in enumerate(pairs) if x != y]
        if differ or len(pairs) != len(lines):
            sys.exit("real_models.py: %s: greedy translations differ on "
                     "lines %s" % (name, differ[:20]))
        print("%s: greedy fp32 identical on all %d lines" %
              (name, len(pairs)), file=sys.stderr)

        # 3. The cells.
        for batch in a.batches:
            inp, gold = (short_src, short_ref) if batch == 1 else (src, ref)
            for beam in a.beams:
                for precision in a.precisions:
                    for threads in a.threads:
                        for engine in ("loom", "ctranslate2"):
                            out = os.path.join(work, "%s.%s.b%d.k%d.%s.t%s" % (
                                name, engine, batch, beam, precision, threads))
                            cmd = (loom_cmd(a, model, inp, batch, beam,
                                            precision, threads, a.runs)
                                   if engine == "loom" else
                                   ct2_cmd(ct2, spm, inp, batch, beam,
                                           precision, threads, a.runs))
                            r = run(cmd, out)
                            r.update({"model": name, "engine": engine,
                                      "batch_size": batch, "beam_size": beam,
                                      "precision_pair": precision,
                                      "thread_count": threads,
                                      "bleu": bleu(a.loom, out, gold)})
                            records.append(r)
                            print(json.dumps(r, sort_keys=True), flush=True)
    table(records)


def table(records):
    cells = {}
    for r in records:
        key = (r["model"], r["batch_size"], r["beam_size"], r["precision_pair"])
        cells.setdefault(key, {})[(r["engine"], r["thread_count"])] = r
    configs = sorted({str(r["thread_count"]) for r in records})
    names = " / ".join(configs)
    print("\n| model | batch | beam | precision | Loom tok/s (%s) | "
          "CT2 tok/s (%s) | Loom best / CT2 best | Loom best 2 / 1 | "
          "BLEU Loom / CT2 | ms/sentence Loom / CT2 |" % (names, names),
          file=sys.stderr)
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
          file=sys.stderr)
    for key, c in sorted(cells.items()):
        def tps(engine):
            return {str(t): r["target_tokens_per_s"] for (e, t), r in c.items()
                    if e == engine}

        def best(engine):
            rs = [r for (e, _), r in c.items() if e == engine]
            return min(rs, key=lambda r: r["seconds_median"]) if rs else None

        mine, theirs = tps("loom"), tps("ctranslate2")
        lb, cb = best("loom"), best("ctranslate2")
        speed = cb["seconds_median"] / lb["seconds_median"] if lb and cb else 0
        two = max([v for t, v in mine.items()
                   if threads_and_workers(t)[0] == 2], default=0)
        scale = two / mine["1"] if mine.get("1") else 0
        fmt = lambda d: " / ".join("%.0f" % d[t] if t in d else "-"
                                   for t in configs)
        print("| %s | %d | %d | %s | %s | %s | %.2fx | %.2fx | %.2f / %.2f | "
              "%.1f / %.1f |" % (
                  key[0], key[1], key[2], key[3], fmt(mine), fmt(theirs),
                  speed, scale, lb["bleu"], cb["bleu"],
                  lb["ms_per_sentence"], cb["ms_per_sentence"]),
              file=sys.stderr)


if __name__ == "__main__":
    main()
