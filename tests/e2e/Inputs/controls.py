"""The decoding controls hold on a trained model, greedy and at beam 4.

  controls.py --loom LOOM --model RUN --inputs VALID.src --work DIR

For each search: every translation has between --min-length and
--max-length pieces; a --target-prefix appears verbatim at the start of its
translation; under --no-repeat-ngram-size 2 no two pieces follow each other
twice in a translation (where, without it, some do); and --nbest N gives N
lines per sentence. Sampling with the same seed repeats itself, and top-k 1
is the search. Pieces are counted as the model's vocabulary splits the text
(`loom score-pairs --json`).
"""
import os

from decoding_case import arguments, pieces, run, sentences as read_sentences, write


def repeats(tokens, n):
    grams = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
    return len(grams) != len(set(grams))


def main():
    args = arguments(__doc__)
    sentences, src = read_sentences(args, "controls.src")

    def translate(*flags):
        return run(args, ["translate", "--model", args.model, "--input", src,
                          "--threads", "1"] + list(flags))

    for search in (["--beam", "1"], ["--beam", "4"]):
        name = " ".join(search)
        plain = translate(*search)
        # Lengths: 6 to 8 pieces, eos not counted.
        bounded = translate(*search, "--min-length", "6", "--max-length", "8")
        lengths = [len(p) for p in pieces(args, sentences, bounded)]
        assert all(6 <= n <= 8 for n in lengths), (name, lengths)
        assert bounded != plain, name
        # Prefixes: the first word of each translation's reverse, forced.
        prefixes = [("ka la" if i % 2 else "") for i in range(len(sentences))]
        write(os.path.join(args.work, "controls.prefix"), prefixes)
        prefixed = translate(*search, "--target-prefix",
                             os.path.join(args.work, "controls.prefix"))
        for p, t in zip(prefixes, prefixed):
            assert t.startswith(p), (name, p, t)
        # No piece bigram twice, where the search alone repeats some.
        plain_pieces = pieces(args, sentences, plain)
        assert any(repeats(p, 2) for p in plain_pieces), name
        norepeat = translate(*search, "--no-repeat-ngram-size", "2")
        assert not any(repeats(p, 2) for p in pieces(args, sentences, norepeat)), name
        # N-best.
        assert len(translate(*search, "--nbest", search[1])) == \
            len(sentences) * int(search[1]), name
        print("%s: lengths within [6, 8], %d prefixes verbatim, no repeated "
              "bigram, n-best lines" % (name, sum(1 for p in prefixes if p)))
    greedy = translate("--beam", "1")
    assert translate("--beam", "1", "--sampling-topk", "1", "--seed", "3") == greedy
    drawn = translate("--beam", "1", "--sampling-topk", "0",
                      "--sampling-temperature", "2", "--seed", "3")
    assert drawn == translate("--beam", "1", "--sampling-topk", "0",
                              "--sampling-temperature", "2", "--seed", "3")
    assert drawn != greedy
    assert drawn != translate("--beam", "1", "--sampling-topk", "0",
                              "--sampling-temperature", "2", "--seed", "4")
    print("sampling: the same seed repeats, another differs, top-k 1 is greedy")
    print("PASS controls")


if __name__ == "__main__":
    main()
