"""Alignments point into the source and follow the task's word order.

  alignments.py --loom LOOM --model RUN --inputs VALID.src --work DIR --order diagonal|reversed

Translates the sentences with `loom translate --with-alignments` (greedy and
beam 4) and requires of every "s-t" pair that s is a piece of the source and
t one of the translation (their pieces counted by `loom score-pairs --json`,
whose vocabulary is the model's), each target piece aligned at most once and
in order, most pieces aligned; and that the pairs follow the task: on the
copy task (`diagonal`) source position rises with target position, on the
reversing task (`reversed`) it falls.
"""
import argparse
import json
import os
import subprocess


def run(args, command):
    return subprocess.run([args.loom] + command, check=True, capture_output=True,
                          text=True).stdout.split("\n")[:-1]


def pieces(args, sources, targets):
    src = os.path.join(args.work, "align-pieces.src")
    tgt = os.path.join(args.work, "align-pieces.tgt")
    with open(src, "w", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s in sources))
    with open(tgt, "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in targets))
    records = run(args, ["score-pairs", "--model", args.model, "--source", src,
                         "--target", tgt, "--json", "--threads", "1"])
    return [len(json.loads(r)["tokens"]) - 1 for r in records]  # eos left out


def correlation(pairs):
    """Pearson's correlation of the source and target positions of pairs."""
    n = len(pairs)
    ms = sum(s for s, _ in pairs) / n
    mt = sum(t for _, t in pairs) / n
    cov = sum((s - ms) * (t - mt) for s, t in pairs)
    vs = sum((s - ms) ** 2 for s, _ in pairs)
    vt = sum((t - mt) ** 2 for _, t in pairs)
    return cov / (vs * vt) ** 0.5 if vs > 0 and vt > 0 else 0.0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--loom", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--order", choices=["diagonal", "reversed"], required=True)
    args = parser.parse_args()
    with open(args.inputs, encoding="utf-8") as f:
        sentences = [line for line in f.read().split("\n") if line.strip()][:24]
    src = os.path.join(args.work, "align.src")
    with open(src, "w", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s in sentences))
    source_pieces = pieces(args, sentences, sentences)
    for search in (["--beam", "1"], ["--beam", "4"]):
        lines = run(args, ["translate", "--model", args.model, "--input", src,
                           "--with-alignments", "--threads", "1"] + search)
        assert len(lines) == len(sentences), lines
        texts = [line.split("\t")[0] for line in lines]
        target_pieces = pieces(args, sentences, texts)
        pairs_total = pieces_total = steps = following = 0
        correlations = []
        for line, n_src, n_tgt in zip(lines, source_pieces, target_pieces):
            fields = line.split("\t")
            assert len(fields) == 2, line
            pairs = [tuple(int(x) for x in p.split("-")) for p in fields[1].split()]
            targets = [t for _, t in pairs]
            assert targets == sorted(set(targets)), line
            for s, t in pairs:
                assert 0 <= s < n_src and 0 <= t < n_tgt, (line, n_src, n_tgt)
            pairs_total += len(pairs)
            pieces_total += n_tgt
            if len(pairs) >= 3:
                correlations.append(correlation(pairs))
            for (s0, _), (s1, _) in zip(pairs, pairs[1:]):
                steps += 1
                following += s1 >= s0 if args.order == "diagonal" else s1 <= s0
        assert pairs_total >= 0.8 * pieces_total, (pairs_total, pieces_total)
        share = following / max(1, steps)
        mean = sum(correlations) / len(correlations)
        print("%s: %d of %d target pieces aligned, %.0f%% of steps %s, "
              "correlation %.2f" %
              (" ".join(search), pairs_total, pieces_total, 100 * share,
               "rising" if args.order == "diagonal" else "falling", mean))
        # Source position against target position, sentence by sentence:
        # near 1 along the diagonal, near -1 along the other one.
        sign = 1 if args.order == "diagonal" else -1
        assert sign * mean >= 0.6, (search, mean)
        assert share >= 0.7, (search, share)
    print("PASS alignments")


if __name__ == "__main__":
    main()
