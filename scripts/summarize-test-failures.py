#!/usr/bin/env python3
"""Prints, last, what failed in a ctest run: each failed test's name and,
for the lit suite, each failed lit test with the end of its output.

ctest's own summary names only "lit" for any of several hundred lit tests,
and a log read from its end (a CI page, a terminal's scrollback) shows the
list of skipped tests above it, not the failure; this puts the failure at
the end. Usage: summarize-test-failures.py BUILD_DIR
"""
import json
import os
import sys

TAIL_LINES = 8


def main():
    if len(sys.argv) != 2:
        print("usage: summarize-test-failures.py BUILD_DIR", file=sys.stderr)
        return 2
    build = sys.argv[1]
    failed_log = os.path.join(build, "Testing", "Temporary", "LastTestsFailed.log")
    failed = []
    if os.path.exists(failed_log):
        with open(failed_log, encoding="utf-8", errors="replace") as f:
            failed = [line.strip().split(":", 1)[-1] for line in f if line.strip()]
    print("=== what failed ===")
    for name in failed:
        print(f"ctest: {name}")
    lit_results = os.path.join(build, "tests", "lit-results.json")
    if "lit" in failed and os.path.exists(lit_results):
        with open(lit_results, encoding="utf-8") as f:
            results = json.load(f).get("tests", [])
        for test in results:
            if test.get("code") not in ("FAIL", "XPASS", "UNRESOLVED", "TIMEOUT"):
                continue
            print(f"lit {test['code']}: {test['name']}")
            output = test.get("output", "").rstrip().splitlines()
            for line in output[-TAIL_LINES:]:
                print(f"  | {line[:200]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
