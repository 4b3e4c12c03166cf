#!/usr/bin/env bash
# Trains the `small` translator on Multi30k En->De and scores it on `val`,
# the run behind docs/PERFORMANCE.md's "A translator on Multi30k" and the
# README's "Train a translator".
#
#   bench/multi30k.sh DATA_DIR [OUT_DIR (default runs/multi30k)]
#       [--loom build/bin/loom] [--epochs 28] [--threads 2] [--average 5]
#
# DATA_DIR holds train.en, train.de, val.en and val.de (29,000 and 1,014
# pairs). The steps, each timed:
#   1. loom train (vocabulary, compile, 28 epochs, greedy BLEU on val after
#      each epoch, a checkpoint per epoch, the last 5 kept)
#   2. loom translate --beam 1 and --beam 4 with the last epoch's parameters
#   3. loom average --last 5 (--average), then --beam 1 and --beam 4 again
#   4. loom score (cased, 13a) for each, and the learning curve as a table
set -euo pipefail

loom=build/bin/loom
epochs=28
threads=2
average=5
positional=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --loom) loom="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --average) average="$2"; shift 2 ;;
    -*) echo "multi30k.sh: unknown option $1" >&2; exit 2 ;;
    *) positional+=("$1"); shift ;;
  esac
done
if [[ ${#positional[@]} -lt 1 ]]; then
  echo "usage: bench/multi30k.sh DATA_DIR [OUT_DIR] [--loom L] [--epochs N] [--threads N]" >&2
  exit 2
fi
data="${positional[0]}"
out="${positional[1]:-runs/multi30k}"
for f in train.en train.de val.en val.de; do
  [[ -f "$data/$f" ]] || { echo "multi30k.sh: no $data/$f" >&2; exit 1; }
done

timed() { # label, command...
  local label="$1"; shift
  local start end
  echo "+ $*" >&2
  start=$(date +%s%N)
  "$@"
  end=$(date +%s%N)
  echo "$label: $(( (end - start) / 1000000 )) ms" >&2
}

timed train "$loom" train --preset small \
  --train "$data/train.en" "$data/train.de" --valid "$data/val.en" "$data/val.de" \
  --out "$out" --max-tokens 4096 --epochs "$epochs" --warmup 800 --lr-scale 0.5 \
  --threads "$threads" --log-every 50 --seed 1 --progress lines
cp "$out/model.safetensors" "$out/last.safetensors"
timed "translate last, greedy" "$loom" translate --model "$out" --weights "$out/last.safetensors" \
  --beam 1 --threads "$threads" --input "$data/val.en" > "$out/val.last.greedy.de"
timed "translate last, beam 4" "$loom" translate --model "$out" --weights "$out/last.safetensors" \
  --beam 4 --threads "$threads" --input "$data/val.en" > "$out/val.last.beam4.de"
# One checkpoint per epoch, the last 5 kept.
(( average > epochs )) && average=$epochs
(( average > 5 )) && average=5
timed average "$loom" average "$out" --last "$average"
timed "translate averaged, greedy" "$loom" translate --model "$out" \
  --beam 1 --threads "$threads" --input "$data/val.en" > "$out/val.avg.greedy.de"
timed "translate averaged, beam 4" "$loom" translate --model "$out" \
  --beam 4 --threads "$threads" --input "$data/val.en" > "$out/val.avg.beam4.de"
for hyp in last.greedy last.beam4 avg.greedy avg.beam4; do
  printf '%-11s ' "$hyp"
  "$loom" score --ref "$data/val.de" --input "$out/val.$hyp.de" | head -1
done
"$loom" score --ref "$data/val.de" --input "$out/val.avg.beam4.de" | tail -1
python3 "$(dirname "$0")/metrics_table.py" "$out" --every 4
