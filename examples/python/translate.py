#!/usr/bin/env python3
"""Translates lines from a file (or stdin) with a Loom translator folder.

    python3 translate.py MODEL_FOLDER [--input FILE] [--beam 4] [--nbest 1]
                         [--scores] [--threads N] [--precision int8]

MODEL_FOLDER is what `loom export` writes or a `loom train` run directory.
Prints each sentence's translations, best first, one per line (with
--scores, the score and a tab before each).
"""

import argparse
import sys

import loom


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model")
    parser.add_argument("--input", help="a file of sentences (default stdin)")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--nbest", type=int, default=1)
    parser.add_argument("--scores", action="store_true")
    parser.add_argument("--threads", type=int)
    parser.add_argument("--precision", choices=["fp32", "int8", "bf16"])
    args = parser.parse_args()

    source = open(args.input, encoding="utf-8") if args.input else sys.stdin
    sentences = source.read().splitlines()
    try:
        translator = loom.Translator(args.model, threads=args.threads,
                                     precision=args.precision)
        results = translator.translate(sentences, beam=args.beam,
                                       nbest=args.nbest,
                                       return_scores=args.scores)
    except loom.Error as e:
        sys.exit("translate.py: %s" % e)
    for result in results:
        for rank, text in enumerate(result.hypotheses):
            if args.scores:
                print("%.6f\t%s" % (result.scores[rank], text))
            else:
                print(text)


if __name__ == "__main__":
    main()
