"""Prints a run's learning curve from DIR/metrics.jsonl as a Markdown table.

  python3 bench/metrics_table.py DIR [--every N]

One row per validation (every N-th, and always the last): the step, the
epoch, the mean training loss since the previous validation (label-smoothed,
per target token), the validation loss and perplexity (no smoothing, no
dropout), greedy BLEU, training tokens/s and the wall time so far.
"""
import argparse
import json
import math


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--every", type=int, default=1)
    args = parser.parse_args()
    rows, losses, rates = [], [], []
    with open(f"{args.dir}/metrics.jsonl") as f:
        for line in f:
            record = json.loads(line)
            if record["type"] == "train":
                losses.append(record["loss"])
                rates.append(record["tokens_per_s"])
            elif record["type"] == "valid":
                rows.append((record, sum(losses) / max(1, len(losses)),
                             sum(rates) / max(1, len(rates))))
                losses, rates = [], []
    print("| step | epoch | train loss | valid loss (ppl) | greedy BLEU "
          "| train tok/s | wall |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for i, (r, loss, rate) in enumerate(rows):
        if i % args.every and i != len(rows) - 1:
            continue
        wall = int(r["elapsed_s"])
        print(f"| {r['step']} | {r['epoch']} | {loss:.3f} "
              f"| {r['valid_nll']:.3f} ({math.exp(r['valid_nll']):.2f}) "
              f"| {r['valid_bleu']:.2f} | {rate:.0f} "
              f"| {wall // 3600}:{wall // 60 % 60:02d}:{wall % 60:02d} |")


if __name__ == "__main__":
    main()
