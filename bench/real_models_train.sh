#!/usr/bin/env bash
# Trains the models bench/real_models.sh decodes: three sizes on Multi30k
# En->De, each for a fixed time, so that they translate real sentences well
# enough to stop early (emit eos) as a trained model does.
#
#   bench/real_models_train.sh DATA_DIR [OUT_DIR (default runs/real)]
#       [--loom build/bin/loom] [--threads 2] [--seconds "900 900 1800"]
#       [--only NAME]
#
#   OUT_DIR/multi30k  the README's recipe (preset multi30k: d_model 128,
#                     4+4 layers, pre-norm)
#   OUT_DIR/small     preset small (d_model 256, 3+3 layers, pre-norm)
#   OUT_DIR/base      bench/configs/base-8k.txtpb (d_model 512, 6+6 layers,
#                     post-norm, the 8000-piece vocabulary Multi30k supports)
#
# --only trains that one model alone. --seconds gives each model's training
# time, in the order above (loom train
# --time-limit: it stops, validates and saves as at the end of a run). Each
# model directory ends up with what `loom translate --model` needs, and its
# metrics.jsonl records the greedy BLEU on val it reached.
set -euo pipefail

loom=build/bin/loom
threads=2
seconds="900 900 1800"
only=""
positional=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --loom) loom="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    -*) echo "real_models_train.sh: unknown option $1" >&2; exit 2 ;;
    *) positional+=("$1"); shift ;;
  esac
done
if [[ ${#positional[@]} -lt 1 ]]; then
  echo "usage: bench/real_models_train.sh DATA_DIR [OUT_DIR] [--loom L] [--threads N] [--seconds \"S1 S2 S3\"]" >&2
  exit 2
fi
data="${positional[0]}"
out="${positional[1]:-runs/real}"
for f in train.en train.de val.en val.de; do
  [[ -f "$data/$f" ]] || { echo "real_models_train.sh: no $data/$f" >&2; exit 1; }
done
read -r -a limits <<<"$seconds"
[[ ${#limits[@]} -eq 3 ]] || { echo "real_models_train.sh: --seconds takes three numbers" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)

# train NAME SECONDS FLAGS...
train() {
  local name=$1 limit=$2
  shift 2
  [[ -z "$only" || "$only" == "$name" ]] || return 0
  echo "+ training $name for ${limit}s" >&2
  "$loom" train "$@" \
    --train "$data/train.en" "$data/train.de" --valid "$data/val.en" "$data/val.de" \
    --out "$out/$name" --epochs 1000 --time-limit "$limit" \
    --threads "$threads" --seed 1 --progress lines --log-every 100 --no-plot
}

train multi30k "${limits[0]}" --preset multi30k --max-tokens 4096 --warmup 2000 --lr-scale 2.5
train small "${limits[1]}" --preset small --max-tokens 4096 --warmup 1000
train base "${limits[2]}" --config "$root/bench/configs/base-8k.txtpb" --max-tokens 4096 --warmup 1000
for name in ${only:-multi30k small base}; do
  printf '%-9s ' "$name"
  grep '"valid_bleu"' "$out/$name/metrics.jsonl" | tail -1 || echo "(no validation)"
done
