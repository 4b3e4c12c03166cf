"""A sentence's translation does not depend on its batch.

  batch_invariance.py --translator FOLDER/loom-translate --inputs VALID.src --work DIR

Translates every sentence alone, then all of them in shuffled orders with
blank lines mixed in, by batches of 1 to 32 sentences, by token budgets and
on two workers, greedy and at beam 4 with 4 hypotheses each, and requires
every translation to be the one the sentence got alone, and n-best lines
per sentence.
"""
import argparse
import os
import random
import subprocess
import sys


def translate(args, lines, flags):
    path = os.path.join(args.work, "in.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    out = subprocess.run([args.translator, "--input", path, "--threads", "1"] + flags,
                         check=True, capture_output=True, text=True).stdout
    return out.split("\n")[:-1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--translator", required=True)
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    with open(args.inputs, encoding="utf-8") as f:
        sentences = [line for line in f.read().split("\n") if line.strip()][:24]
    rng = random.Random(5)
    failures = 0
    for search, nbest in (("--beam 1", 1), ("--beam 4 --nbest 4", 4),
                          ("--beam 1 --sampling-topk 0 --sampling-temperature 1.5 --seed 4", 1)):
        alone = {}
        for s in sentences:
            got = translate(args, [s], search.split())
            assert len(got) == nbest, (s, got)
            alone[s] = got
        # A model that translated everything to nothing would pass trivially.
        assert sum(1 for s in sentences if alone[s][0]) >= len(sentences) // 2, alone
        if "sampling" in search:
            # Drawn, not searched: some translation differs from greedy's.
            greedy = translate(args, sentences, ["--beam", "1"])
            assert greedy != [alone[s][0] for s in sentences], "sampling drew greedy"

        checked = 0
        for batching in ("--batch 1", "--batch 2", "--batch 3", "--batch 7", "--batch 32",
                         "--batch-tokens 12", "--batch-tokens 64", "--batch 5 --workers 2"):
            order = sentences[:]
            rng.shuffle(order)
            lines = []
            for s in order:
                lines.append(s)
                if rng.random() < 0.25:
                    lines.append("")
            got = translate(args, lines, search.split() + batching.split())
            if len(got) != nbest * len(lines):
                print("FAIL %s %s: %d lines for %d inputs" % (search, batching, len(got), len(lines)))
                failures += 1
                continue
            for i, line in enumerate(lines):
                mine = got[i * nbest:(i + 1) * nbest]
                expected = alone[line] if line else [""] * nbest
                if mine != expected:
                    print("FAIL %s %s: %r gave %r, alone %r" % (search, batching, line, mine, expected))
                    failures += 1
                checked += 1
        print("%s: %d translations, each as alone" % (search, checked))
    if failures:
        sys.exit("%d translations depended on their batch" % failures)
    print("PASS batch invariance")


if __name__ == "__main__":
    main()
