#!/usr/bin/python3
"""Translating through the Python module against `loom-translate`, and
against CTranslate2's own Python module, in one run.

    bench/python_translate.py --folder FOLDER --input FILE
        [--beams 1,4] [--batch 32] [--threads 2] [--runs 5] [--rounds 2]
        [--ct2 CT2_DIR] [--loom-translate PATH] [--pythonpath build/python]

FOLDER is a translator folder (`loom export`) or a model directory with its
translate.loomx; CT2_DIR is bench/ct2_convert.py's conversion of the same
model (CTranslate2 runs where its module imports: ../shared/peers/
build_ct2.sh, PYTHONPATH and LD_LIBRARY_PATH as it says). For every beam and
round, the three run back to back (in the reverse order every other
round), each in a fresh process timing `--runs`
translations of the whole file after one that warms it up, as
`loom-translate --time-runs` does: the same file, batch, beam, threads and
length limit. Each system prints one JSON line (loom-translate's
`--time-runs` format); this script prints them all on stdout and a table of
medians, with Python's cost over loom-translate, on stderr.

With --inner, this script is itself the Python-module process: it opens the
folder with loom.Translator and times translate() on the file's lines.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def inner(a):
    """Times loom.Translator.translate as loom-translate times itself."""
    import loom

    with open(a.input, encoding="utf-8") as f:
        lines = f.read().splitlines()
    t = loom.Translator(a.folder, threads=a.threads)
    options = dict(beam=a.beam, batch=a.batch)
    first = t.translate(lines, **options)  # warms up, as loom-translate's
    seconds = []
    for _ in range(a.runs):
        start = time.perf_counter()
        t.translate(lines, **options)
        seconds.append(time.perf_counter() - start)
    median = statistics.median(seconds)
    sentences = sum(1 for line in lines if line.strip())
    # Target tokens as loom-translate counts them: the vocabulary's pieces.
    import sentencepiece as spm
    vocab = spm.SentencePieceProcessor(
        model_file=os.path.join(a.folder, "spm.model"))
    target = sum(len(vocab.encode(r.hypotheses[0])) for r in first
                 if r.hypotheses[0])
    print(json.dumps({"system": "loom-python", "beam": a.beam,
                      "batch": a.batch, "threads": a.threads,
                      "seconds": seconds, "seconds_median": median,
                      "target_tokens_per_s": target / median,
                      "sentences_per_s": sentences / median}),
          file=sys.stderr)


def last_json(stderr):
    for line in reversed(stderr.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("no timing line in:\n" + stderr)


def timed(cmd, env=None):
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), done.stderr))
    return last_json(done.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--folder", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--beams", default="1,4")
    p.add_argument("--beam", type=int, default=4)  # --inner's
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--ct2")
    p.add_argument("--loom-translate",
                   default=os.path.join(ROOT, "build", "bin",
                                        "loom-translate"))
    p.add_argument("--pythonpath",
                   default=os.path.join(ROOT, "build", "python"))
    p.add_argument("--inner", action="store_true")
    a = p.parse_args()
    if a.inner:
        return inner(a)

    env = dict(os.environ)
    env["PYTHONPATH"] = a.pythonpath + (
        ":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    have_ct2 = a.ct2 and subprocess.run(
        [sys.executable, "-c", "import ctranslate2"],
        capture_output=True).returncode == 0
    if a.ct2 and not have_ct2:
        print("python_translate: ctranslate2 does not import; without it",
              file=sys.stderr)
    records = []
    for rnd in range(a.rounds):
        for beam in [int(b) for b in a.beams.split(",")]:
            common = ["--beam", str(beam), "--batch", str(a.batch),
                      "--threads", str(a.threads)]
            cmds = [("loom-translate",
                     [a.loom_translate, "--model", a.folder, "--input",
                      a.input, "--time-runs", str(a.runs)] + common, None),
                    ("loom-python",
                     [sys.executable, os.path.abspath(__file__), "--inner",
                      "--folder", a.folder, "--input", a.input, "--runs",
                      str(a.runs)] + common, env)]
            if have_ct2:
                cmds.append(("ctranslate2-python",
                             [sys.executable,
                              os.path.join(ROOT, "bench", "ct2_translate.py"),
                              "--model", a.ct2, "--spm",
                              os.path.join(a.folder, "spm.model"), "--input",
                              a.input, "--time-runs", str(a.runs)] + common,
                             None))
            # Alternate who goes first, so that neither always runs on a
            # machine the other has just warmed (or heated).
            if rnd % 2:
                cmds.reverse()
            for system, cmd, cmd_env in cmds:
                r = timed(cmd, cmd_env)
                r.update(system=system, beam=beam, round=rnd)
                print(json.dumps(r, sort_keys=True), flush=True)
                records.append(r)

    print("| beam | system | median s | sentences/s | vs loom-translate |",
          file=sys.stderr)
    print("| ---: | --- | ---: | ---: | ---: |", file=sys.stderr)
    for beam in [int(b) for b in a.beams.split(",")]:
        cell = [r for r in records if r["beam"] == beam]
        best = {}
        for r in cell:
            best.setdefault(r["system"], []).append(r["seconds_median"])
        base = statistics.median(best["loom-translate"])
        for system, medians in best.items():
            m = statistics.median(medians)
            rates = [r["sentences_per_s"] * r["seconds_median"] / m
                     for r in cell if r["system"] == system]
            print("| %d | %s | %.3f | %.1f | %.3f |"
                  % (beam, system, m, rates[0], m / base), file=sys.stderr)


if __name__ == "__main__":
    main()
