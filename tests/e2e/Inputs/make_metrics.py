"""Writes DIR/metrics.jsonl as `loom train` does: a train record every 50
steps and a valid record every 100, for STEPS steps; --shift moves every
curve so that two runs differ.

    make_metrics.py DIR STEPS [--shift X]
"""
import json
import math
import os
import sys

directory, steps = sys.argv[1], int(sys.argv[2])
shift = float(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--shift" else 0.0
os.makedirs(directory, exist_ok=True)
with open(os.path.join(directory, "metrics.jsonl"), "w") as f:
    for step in range(50, steps + 1, 50):
        elapsed = step * 0.4 + shift * 10
        f.write(json.dumps({"type": "train", "step": step, "epoch": 1 + step // 100,
                            "loss": 8.0 / math.sqrt(step / 50) + shift, "lr": 1e-3 * min(1, step / 200),
                            "tokens_per_s": 12000 + 500 * shift, "tokens": step * 5000,
                            "elapsed_s": elapsed, "ranks": 1, "wait_share": 0}) + "\n")
        if step % 100 == 0:
            f.write(json.dumps({"type": "valid", "step": step, "epoch": step // 100,
                                "valid_nll": 6.0 / math.sqrt(step / 50) + shift,
                                "valid_ppl": 10.0, "valid_bleu": 3.0 * step / 100 - shift,
                                "valid_s": 1.5, "elapsed_s": elapsed + 1.5}) + "\n")
