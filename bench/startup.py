#!/usr/bin/env python3
"""Start-up of Loom's translators, measured from outside the process.

For each command it starts the process, writes one sentence to its stdin,
and measures the wall time until the first line of output arrives, the
process's peak RSS (from wait4), over --runs runs (the median and range are
printed). Every command translates the same sentence, so the numbers differ
only by what each does before its first output.

  bench/startup.py --runs 7 --sentence "A man rides a bike." \
      --name loom-translate -- OUT/loom-translate --threads 2 \
      --name "loom translate" -- build/bin/loom translate --model DIR --threads 2
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def measure(command, sentence, env):
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    proc.stdin.write((sentence + "\n").encode())
    proc.stdin.close()
    first = proc.stdout.readline()
    elapsed = time.perf_counter() - start
    rest = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0 or not first:
        sys.exit("%s failed: %s" % (" ".join(command), err.strip()))
    return elapsed, usage.ru_maxrss * 1024, (first + rest).decode().strip()


def main():
    argv = sys.argv[1:]
    parser = argparse.ArgumentParser(description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--sentence", default="A man in a blue shirt is riding a bike.")
    # --name N -- COMMAND ... groups, split by hand.
    groups, options = [], []
    i = 0
    while i < len(argv):
        if argv[i] == "--name":
            name = argv[i + 1]
            assert argv[i + 2] == "--", "--name N -- COMMAND"
            j = i + 3
            while j < len(argv) and argv[j] != "--name":
                j += 1
            groups.append((name, argv[i + 3:j]))
            i = j
        else:
            options.append(argv[i])
            i += 1
    args = parser.parse_args(options)
    if not groups:
        parser.error("give at least one --name N -- COMMAND")
    print("| command | first output, median [min, max] | peak RSS | output |")
    print("| --- | ---: | ---: | --- |")
    for name, command in groups:
        times, rss, out = [], [], ""
        measure(command, args.sentence, dict(os.environ))  # warm the page cache
        for _ in range(args.runs):
            t, r, out = measure(command, args.sentence, dict(os.environ))
            times.append(t)
            rss.append(r)
        print("| %s | %.3f s [%.3f, %.3f] | %.0f MiB | %s |" % (
            name, statistics.median(times), min(times), max(times),
            max(rss) / 2**20, out))


if __name__ == "__main__":
    main()
