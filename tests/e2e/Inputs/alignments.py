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
from decoding_case import arguments, pieces, run, sentences as read_sentences


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
    args = arguments(__doc__, lambda parser: parser.add_argument(
        "--order", choices=["diagonal", "reversed"], required=True))
    sentences, src = read_sentences(args, "align.src")
    source_pieces = [len(p) for p in pieces(args, sentences, sentences)]
    for search in (["--beam", "1"], ["--beam", "4"]):
        lines = run(args, ["translate", "--model", args.model, "--input", src,
                           "--with-alignments", "--threads", "1"] + search)
        assert len(lines) == len(sentences), lines
        texts = [line.split("\t")[0] for line in lines]
        target_pieces = [len(p) for p in pieces(args, sentences, texts)]
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
