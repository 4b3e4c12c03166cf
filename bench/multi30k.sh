#!/usr/bin/env bash
# Trains the `multi30k` recipe on Multi30k En->De and scores it on `val`,
# the run behind docs/PERFORMANCE.md's "A translator on Multi30k" and the
# README's "Train a translator".
#
#   bench/multi30k.sh DATA_DIR [OUT_DIR (default runs/multi30k)]
#       [--loom build/bin/loom] [--epochs 48] [--threads 2] [--average 10]
#       [--beam 5] [--alpha 2.0] [--precision fp32|bf16]
#
# DATA_DIR holds train.en, train.de, val.en and val.de (29,000 and 1,014
# pairs). The steps, each timed:
#   1. loom train (vocabulary, compile, 48 epochs in --precision (bf16:
#      mixed precision, which needs a CPU with AVX512-BF16, or
#      LOOM_CPU_EMULATE_BF16=1 to emulate it), greedy BLEU on val after
#      each epoch, a checkpoint per epoch, the last 10 kept, the learning
#      curves redrawn into OUT_DIR/curves.png)
#   2. loom translate greedy and with beam BEAM, length penalty ALPHA, with
#      the last epoch's parameters
#   3. loom average --last 10 (--average), then both searches again
#   4. loom score (cased, 13a) for each, and the learning curve as a table
set -euo pipefail

loom=build/bin/loom
epochs=48
threads=2
average=10
beam=5
alpha=2.0
precision=fp32
positional=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --loom) loom="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --average) average="$2"; shift 2 ;;
    --beam) beam="$2"; shift 2 ;;
    --alpha) alpha="$2"; shift 2 ;;
    --precision) precision="$2"; shift 2 ;;
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

timed train "$loom" train --preset multi30k \
  --train "$data/train.en" "$data/train.de" --valid "$data/val.en" "$data/val.de" \
  --out "$out" --max-tokens 4096 --epochs "$epochs" --warmup 2000 --lr-scale 2.5 \
  --keep "$average" --threads "$threads" --log-every 50 --seed 1 --progress lines \
  --precision "$precision"
cp "$out/model.safetensors" "$out/last.safetensors"
search="beam$beam"
timed "translate last, greedy" "$loom" translate --model "$out" --weights "$out/last.safetensors" \
  --beam 1 --threads "$threads" --input "$data/val.en" > "$out/val.last.greedy.de"
timed "translate last, beam $beam" "$loom" translate --model "$out" --weights "$out/last.safetensors" \
  --beam "$beam" --alpha "$alpha" --threads "$threads" --input "$data/val.en" > "$out/val.last.$search.de"
# One checkpoint per epoch, the last --keep kept.
(( average > epochs )) && average=$epochs
timed average "$loom" average "$out" --last "$average"
timed "translate averaged, greedy" "$loom" translate --model "$out" \
  --beam 1 --threads "$threads" --input "$data/val.en" > "$out/val.avg.greedy.de"
timed "translate averaged, beam $beam" "$loom" translate --model "$out" \
  --beam "$beam" --alpha "$alpha" --threads "$threads" --input "$data/val.en" > "$out/val.avg.$search.de"
for hyp in last.greedy "last.$search" avg.greedy "avg.$search"; do
  printf '%-11s ' "$hyp"
  "$loom" score --ref "$data/val.de" --input "$out/val.$hyp.de" | head -1
done
"$loom" score --ref "$data/val.de" --input "$out/val.avg.$search.de" | tail -1
python3 "$(dirname "$0")/metrics_table.py" "$out" --every 4
echo "learning curves: $out/curves.png"
