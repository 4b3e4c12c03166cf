#!/usr/bin/env bash
# A shipped translator: a `small` model directory (one training step on
# Multi30k, enough to have the files; start-up does not depend on the
# weights), exported with `loom export`, then the start-up to the first
# translated line, the peak RSS, and the sizes of the binary and the folder,
# beside `loom translate` reusing the directory's cached executable and
# `loom translate` compiling at start-up (the cache deleted first).
# bench/startup.py prints one Markdown table per input.
# Usage: bench/export.sh DATA [WORK]   (DATA holds Multi30k's train.en/de)
set -euo pipefail
cd "$(dirname "$0")/.."
data=$1
work=${2:-runs/export-bench}
loom=build/bin/loom
rm -rf "$work"
mkdir -p "$work"
run() { echo "+ $*" >&2; "$@"; }

run $loom train --preset small --train "$data/train.en" "$data/train.de" \
  --out "$work/run" --steps 1 --max-tokens 4096 --threads 2 --progress lines > /dev/null
run $loom export --model "$work/run" -o "$work/out"

echo
echo "sizes (bytes):"
stat -c '%s %n' "$work/out/loom-translate" "$work/out/lib/"* "$work/out/translate.loomx" \
  "$work/out/model.safetensors" "$work/out/spm.model"
echo "folder: $(du -sb "$work/out" | cut -f1) bytes"
echo "loom-translate needs: $(ldd "$work/out/loom-translate" | awk '{print $1}' | tr '\n' ' ')"
echo

# The cache is rebuilt by the first `loom translate`; the third command
# deletes it before each run, so it compiles every time.
rm -f "$work/run/translate.loomx"
run $loom translate --model "$work/run" --threads 2 < /dev/null
# An empty line: loading alone (it translates to an empty line). Then one
# sentence: loading and decoding it (an untrained model decodes to the
# length limit, so this bounds the decoding part from above).
for sentence in "" "A man in a blue shirt is riding a bike."; do
  echo
  echo "sentence: '$sentence'"
  run python3 bench/startup.py --runs 7 --sentence "$sentence" \
    --name "loom-translate (exported folder)" -- "$work/out/loom-translate" --threads 2 \
    --name "loom translate (cached executable)" -- $loom translate --model "$work/run" --threads 2 \
    --name "loom translate (compiling at start-up)" -- \
        bash -c "rm -f $work/run/translate.loomx && exec $loom translate --model $work/run --threads 2"
done
