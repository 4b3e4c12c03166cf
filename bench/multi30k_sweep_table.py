"""The Markdown table of bench/multi30k_sweep.sh: one row per run.

    python3 bench/multi30k_sweep_table.py RUN [RUN...]

RUN is a run directory; RUN.scores (beam, alpha, `loom score --json`, one
line per decoding) and RUN.train_s (wall seconds of `loom train`, when the
sweep timed it) sit beside it.
"""
import json
import os
import sys


def last_validation(run):
    best, last = None, None
    with open(os.path.join(run, "metrics.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            if record.get("type") != "valid":
                continue
            last = record
            if record["valid_bleu"] is not None and (best is None or record["valid_bleu"] > best["valid_bleu"]):
                best = record
    return best, last


def clock(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def main(runs):
    print("| recipe | epochs | training | valid loss (last) | best greedy in training | "
          "avg greedy | avg beam 4, α 0.6 | avg, best of the grid |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for run in runs:
        best, last = last_validation(run)
        timed = run + ".train_s"
        seconds = float(open(timed).read()) if os.path.exists(timed) else last["elapsed_s"]
        scores = {}
        with open(run + ".scores") as f:
            for line in f:
                beam, alpha, text = line.split(" ", 2)
                scores[(int(beam), float(alpha))] = json.loads(text)
        greedy = next((s for (b, _), s in scores.items() if b == 1), None)
        beam4 = scores.get((4, 0.6))
        (top_beam, top_alpha), top = max(scores.items(), key=lambda kv: kv[1]["score"])
        cell = lambda s: f"{s['score']:.2f}" if s else "—"
        print(f"| {os.path.basename(os.path.normpath(run))} | {last['epoch']} | {clock(seconds)} | "
              f"{last['valid_nll']:.3f} | {best['valid_bleu']:.2f} (epoch {best['epoch']}) | "
              f"{cell(greedy)} | {cell(beam4)} | **{top['score']:.2f}** (beam {top_beam}, α {top_alpha:g}, "
              f"BP {top['bp']:.3f}) |")


if __name__ == "__main__":
    main(sys.argv[1:])
