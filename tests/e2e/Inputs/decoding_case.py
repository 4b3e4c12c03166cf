"""What the decoding property scripts share: their arguments, running
`loom`, writing lines, the validation sentences, and a text's pieces.

Each script takes --loom LOOM --model RUN --inputs VALID.src --work DIR (a
trained model directory, its validation sources, a scratch folder).
"""
import argparse
import json
import os
import subprocess


def arguments(doc, extra=None):
    """The common arguments, and those `extra(parser)` adds."""
    parser = argparse.ArgumentParser(description=doc)
    for name in ("--loom", "--model", "--inputs", "--work"):
        parser.add_argument(name, required=True)
    if extra:
        extra(parser)
    return parser.parse_args()


def run(args, command):
    """`loom COMMAND`'s stdout lines; a failure raises."""
    return subprocess.run([args.loom] + command, check=True, capture_output=True,
                          text=True).stdout.split("\n")[:-1]


def write(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def sentences(args, name, count=24):
    """The first `count` non-blank sentences of --inputs, and a file of them
    in --work named `name`."""
    with open(args.inputs, encoding="utf-8") as f:
        lines = [line for line in f.read().split("\n") if line.strip()][:count]
    path = os.path.join(args.work, name)
    write(path, lines)
    return lines, path


def pieces(args, sources, texts):
    """Each text's pieces as the model's vocabulary splits it, eos left out
    (`loom score-pairs --json` of each text after its source)."""
    src, tgt = (os.path.join(args.work, "pieces." + x) for x in ("src", "tgt"))
    write(src, sources)
    write(tgt, texts)
    return [json.loads(r)["tokens"][:-1] for r in
            run(args, ["score-pairs", "--model", args.model, "--source", src,
                       "--target", tgt, "--json", "--threads", "1"])]
