#!/usr/bin/env bash
# A shipped translator: a `small` model directory (60 training steps on
# Multi30k: enough for translations that are not empty; start-up does not
# depend on the weights), exported with `loom export`, then the start-up to
# the first translated line, the peak RSS, and the sizes of the binary and
# the folder. Beside it in the same run: the PyTorch peer
# (bench/pytorch_translate.py, the same weights and vocabulary, greedy with a
# key/value cache, compared with loom-translate --beam 1), `loom translate`
# reusing the directory's cached executable and `loom translate` compiling
# at start-up (the cache deleted first).
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
  --out "$work/run" --steps 60 --warmup 30 --max-tokens 4096 --threads 2 --progress lines > /dev/null
run $loom export --model "$work/run" -o "$work/out"

echo
echo "sizes (bytes):"
stat -c '%s %n' "$work/out/loom-translate" "$work/out/lib/"* "$work/out/translate.loomx" \
  "$work/out/model.safetensors" "$work/out/spm.model"
echo "folder: $(du -sb "$work/out" | cut -f1) bytes"
echo "loom-translate needs: $(ldd "$work/out/loom-translate" | awk '{print $1}' | tr '\n' ' ')"
echo

# The two translate the same: loom-translate --beam 1 and the PyTorch peer.
head -100 "$data/val.en" > "$work/val100.en"
"$work/out/loom-translate" --beam 1 --threads 2 < "$work/val100.en" > "$work/loom.txt"
/usr/bin/python3 bench/pytorch_translate.py --model "$work/run" --threads 2 < "$work/val100.en" > "$work/pytorch.txt"
echo "greedy translations of 100 val sentences equal to PyTorch's: $(paste -d '\t' "$work/loom.txt" "$work/pytorch.txt" | awk -F '\t' '$1 == $2' | wc -l)/100"

# The cache is rebuilt by the first `loom translate`; the fifth command
# deletes it before each run, so it compiles every time.
rm -f "$work/run/translate.loomx"
run $loom translate --model "$work/run" --threads 2 < /dev/null
# An empty line: loading alone (it translates to an empty line). Then one
# sentence: loading, encoding it and decoding its translation.
for sentence in "" "A man in a blue shirt is riding a bike."; do
  echo
  echo "sentence: '$sentence'"
  run python3 bench/startup.py --runs 7 --sentence "$sentence" \
    --name "loom-translate --beam 1" -- "$work/out/loom-translate" --beam 1 --threads 2 \
    --name "PyTorch, greedy" -- /usr/bin/python3 bench/pytorch_translate.py --model "$work/run" --threads 2 \
    --name "loom-translate (beam 4)" -- "$work/out/loom-translate" --threads 2 \
    --name "loom translate (cached executable)" -- $loom translate --model "$work/run" --threads 2 \
    --name "loom translate (compiling at start-up)" -- \
        bash -c "rm -f $work/run/translate.loomx && exec $loom translate --model $work/run --threads 2"
done
