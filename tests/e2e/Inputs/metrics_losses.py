"""Prints the losses a run's metrics.jsonl recorded, one per line:
"train STEP LOSS" and "valid STEP NLL BLEU", in the file's order, without
the timing fields (which differ between runs of the same training)."""
import json
import sys

for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["type"] == "train":
        print("train", r["step"], r["loss"])
    else:
        print("valid", r["step"], r["valid_nll"], r["valid_bleu"])
