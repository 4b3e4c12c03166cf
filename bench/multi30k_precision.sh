#!/usr/bin/env bash
# Translation quality and speed of one trained translator at each linear
# precision: Multi30k `val` translated with fp32, int8 and bf16 (bf16 where
# the CPU has AVX512-BF16), greedy and beam 4, each scored (cased BLEU, 13a)
# and timed.
#
#   bench/multi30k_precision.sh MODEL_DIR DATA_DIR [--loom build/bin/loom]
#       [--threads 2] [--precisions "fp32 int8 bf16"]
#
# MODEL_DIR is a `loom train` directory (bench/multi30k.sh makes one, with
# the averaged parameters in model.safetensors); DATA_DIR holds val.en and
# val.de. `loom translate --precision P` compiles the model directory's
# translate.P.loomx on first use; that compile is timed apart from the
# translation. One line per precision and beam on stdout:
#   precision beam BLEU seconds sentences/s
set -euo pipefail

loom=build/bin/loom
threads=2
if grep -q ' avx512_bf16' /proc/cpuinfo 2>/dev/null; then
  precisions="fp32 int8 bf16"
else
  precisions="fp32 int8"
fi
positional=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --loom) loom="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --precisions) precisions="$2"; shift 2 ;;
    -*) echo "multi30k_precision.sh: unknown option $1" >&2; exit 2 ;;
    *) positional+=("$1"); shift ;;
  esac
done
if [[ ${#positional[@]} -ne 2 ]]; then
  echo "usage: bench/multi30k_precision.sh MODEL_DIR DATA_DIR [--loom L] [--threads N] [--precisions LIST]" >&2
  exit 2
fi
model="${positional[0]}"
data="${positional[1]}"
for f in val.en val.de; do
  [[ -f "$data/$f" ]] || { echo "multi30k_precision.sh: no $data/$f" >&2; exit 1; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
sentences=$(wc -l < "$data/val.en")

now() { date +%s%N; }
printf '%-9s %4s %6s %8s %11s\n' precision beam BLEU seconds sentences/s
for precision in $precisions; do
  # The first call compiles translate.<precision>.loomx if it is missing or
  # stale; a one-line input keeps that out of the timed runs.
  head -1 "$data/val.en" | "$loom" translate --model "$model" \
    --precision "$precision" --threads "$threads" > /dev/null
  for beam in 1 4; do
    hyp="$out/val.$precision.beam$beam.de"
    start=$(now)
    "$loom" translate --model "$model" --precision "$precision" --beam "$beam" \
      --threads "$threads" --input "$data/val.en" > "$hyp"
    end=$(now)
    bleu=$("$loom" score --ref "$data/val.de" --input "$hyp" | head -1 |
      sed -n 's/^BLEU = \([0-9.]*\).*/\1/p')
    seconds=$(awk -v ns=$((end - start)) 'BEGIN { printf "%.2f", ns / 1e9 }')
    rate=$(awk -v n="$sentences" -v s="$seconds" 'BEGIN { printf "%.1f", n / s }')
    printf '%-9s %4s %6s %8s %11s\n' "$precision" "$beam" "$bleu" "$seconds" "$rate"
  done
done
