#!/usr/bin/env python3
"""Counts loom ops in one function of an MLIR file, one "op: N" line each.

    count_ops.py FILE FUNCTION OP...

For comparing what the fusion passes found in two modules (a --dump-dir
stage of `loom compile`), function by function.
"""
import re
import sys


def main():
    path, function, ops = sys.argv[1], sys.argv[2], sys.argv[3:]
    text = open(path).read()
    bodies = re.split(r"\n  func\.func @", text)
    for body in bodies[1:]:
        if body.split("(")[0] != function:
            continue
        for op in ops:
            count = len(re.findall(r"= loom\." + re.escape(op) + r" ", body))
            print(f"{op}: {count}")
        return 0
    print(f"no function @{function} in {path}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
