#!/bin/sh
# Writes the kernel suites' cases into LOOM_GOLDEN_DIR (tests/unit/GoldenCase.h):
# their CPU runs, each case checked against the interpreter as it is written.
#   write-golden.sh LibraryKernelsTest AttentionKernelsTest
set -e
: "${LOOM_GOLDEN_DIR:?LOOM_GOLDEN_DIR names the folder to write}"
rm -rf "$LOOM_GOLDEN_DIR"
mkdir -p "$LOOM_GOLDEN_DIR"
for suite in "$@"; do
  "$suite" --gtest_filter='DeviceKernels/*/cpu:DeviceAttention/*/cpu' --gtest_brief=1
done
count=$(find "$LOOM_GOLDEN_DIR" -name '*.safetensors' | wc -l)
echo "$count golden cases in $LOOM_GOLDEN_DIR"
test "$count" -gt 0
