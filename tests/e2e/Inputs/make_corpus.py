"""Writes a small synthetic parallel corpus: OUT.src and OUT.tgt.

  make_corpus.py OUT LINES SEED [copy]

Each source sentence is 2-6 words from a fixed word list; its "translation"
maps every word to another word and reverses the order, so a model can
learn it from a few hundred pairs. With `copy`, the order is kept: word i
translates to word i (a task whose alignment is the diagonal).
"""
import random
import sys

SOURCE = ["alpha", "bravo", "delta", "echo", "golf", "hotel", "kilo", "lima"]
TARGET = ["ah", "be", "de", "eh", "ge", "ha", "ka", "la"]


def main(out, lines, seed, copy=False):
    rng = random.Random(seed)
    with open(out + ".src", "w") as src, open(out + ".tgt", "w") as tgt:
        for _ in range(lines):
            words = [rng.randrange(len(SOURCE)) for _ in range(rng.randint(2, 6))]
            src.write(" ".join(SOURCE[w] for w in words) + "\n")
            order = words if copy else reversed(words)
            tgt.write(" ".join(TARGET[w] for w in order) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
         len(sys.argv) > 4 and sys.argv[4] == "copy")
