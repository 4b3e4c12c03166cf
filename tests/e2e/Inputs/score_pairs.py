"""Scoring a translation gives the score the search reported.

  score_pairs.py --loom LOOM --model RUN --inputs VALID.src --work DIR

Translates the sentences with `loom translate --with-scores` (greedy, beam 4
with 4 hypotheses, and beam 4 under the power length penalty at alpha 1),
then scores each (sentence, translation) pair with `loom score-pairs
--normalize` at the same length penalty, and requires the two scores to
agree; `--json` must give each pair's pieces, eos last, with log-probabilities
summing to its total.
"""
import json
import math
import os

from decoding_case import arguments, run, sentences as read_sentences, write


def main():
    args = arguments(__doc__)
    sentences, src = read_sentences(args, "score.src")
    common = ["--model", args.model, "--threads", "1"]
    for search, nbest, penalty in (
            (["--beam", "1", "--alpha", "0"], 1, ["--alpha", "0"]),
            (["--beam", "4", "--nbest", "4"], 4, []),
            (["--beam", "4", "--length-penalty-form", "power", "--alpha", "1"], 1,
             ["--length-penalty-form", "power", "--alpha", "1"])):
        # Room to end with eos: a translation cut at its length limit has no
        # eos, which scoring adds.
        lines = run(args, ["translate", "--input", src, "--with-scores",
                           "--max-len-ratio", "4"] + common + search)
        assert len(lines) == nbest * len(sentences), (search, len(lines))
        reported = [float(line.split("\t", 1)[0]) for line in lines]
        translations = [line.split("\t", 1)[1] for line in lines]
        pairs_src = os.path.join(args.work, "pairs.src")
        pairs_tgt = os.path.join(args.work, "pairs.tgt")
        write(pairs_src, [s for s in sentences for _ in range(nbest)])
        write(pairs_tgt, translations)
        scored = [float(x) for x in run(args, ["score-pairs", "--source", pairs_src,
                                               "--target", pairs_tgt, "--normalize"]
                                        + common + penalty)]
        assert len(scored) == len(reported)
        # Scoring text tokenizes it as the vocabulary does; a translation
        # whose pieces were not that segmentation (a trailing space piece,
        # which decoding drops) is another token sequence, and may score
        # otherwise. Every other pair must agree.
        worst, compared = 0.0, 0
        for a, b, text in zip(scored, reported, translations):
            if text != " ".join(text.split()):
                continue
            compared += 1
            worst = max(worst, abs(a - b))
        assert compared >= 0.9 * len(scored), (search, compared, len(scored))
        assert worst <= 1e-4, (search, worst)
        # The search's n-best come best first by the score it reported.
        for i in range(0, len(reported), nbest):
            assert reported[i:i + nbest] == sorted(reported[i:i + nbest], reverse=True)
        print("%s: %d of %d translations score as reported (largest difference %.1e)"
              % (" ".join(search), compared, len(scored), worst))
    records = [json.loads(line) for line in
               run(args, ["score-pairs", "--source", pairs_src, "--target", pairs_tgt,
                          "--json"] + common)]
    for record in records:
        assert record["tokens"][-1] == "</s>", record
        assert len(record["tokens"]) == len(record["token_log_probs"]), record
        assert math.isclose(sum(record["token_log_probs"]), record["log_prob"],
                            abs_tol=1e-4), record
        assert all(lp <= 0 for lp in record["token_log_probs"]), record
    print("PASS scoring")


if __name__ == "__main__":
    main()
