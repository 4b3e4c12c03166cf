#!/usr/bin/env bash
# Trains the Multi30k recipes of bench/multi30k_sweep.tsv one after the
# other and scores each on `val`: the sweep behind docs/PERFORMANCE.md's
# "Finding the multi30k recipe".
#
#   bench/multi30k_sweep.sh DATA_DIR [OUT_DIR (default runs/sweep)]
#       [--only NAME[,NAME...]] [--loom build/bin/loom] [--threads 2]
#       [--beams "1 4 5"] [--alphas "0.6 1.0 1.5 2.0"]
#
# For each row: `loom train` into OUT_DIR/NAME (skipped when the run is
# already complete there), `loom average --last N`, then `loom translate`
# of val.en with every beam size and length penalty of the grid, each
# scored by `loom score` (cased, 13a). OUT_DIR/results.md gets one table
# row per recipe and OUT_DIR/curves.png the learning curves side by side
# (`loom plot`). Beam size and length penalty are chosen on `val` itself:
# Multi30k has no second held-out set in DATA_DIR, and the table says so.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
loom=build/bin/loom
threads=2
only=""
beams="1 4 5"
alphas="0.6 1.0 1.5 2.0"
positional=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --loom) loom="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --only) only=",$2,"; shift 2 ;;
    --beams) beams="$2"; shift 2 ;;
    --alphas) alphas="$2"; shift 2 ;;
    -*) echo "multi30k_sweep.sh: unknown option $1" >&2; exit 2 ;;
    *) positional+=("$1"); shift ;;
  esac
done
if [[ ${#positional[@]} -lt 1 ]]; then
  echo "usage: bench/multi30k_sweep.sh DATA_DIR [OUT_DIR] [--only NAMES] [--loom L] [--threads N]" >&2
  exit 2
fi
data="${positional[0]}"
out="${positional[1]:-runs/sweep}"
for f in train.en train.de val.en val.de; do
  [[ -f "$data/$f" ]] || { echo "multi30k_sweep.sh: no $data/$f" >&2; exit 1; }
done
mkdir -p "$out"

runs=()
while IFS=$'\t' read -r name model options average; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  [[ -n "$only" && "$only" != *",$name,"* ]] && continue
  run="$out/$name"
  case "$model" in
    preset:*) model_args=(--preset "${model#preset:}") ;;
    *) model_args=(--config "$here/configs/$model") ;;
  esac
  if [[ ! -f "$run/model.safetensors" ]]; then
    rm -rf "$run"
    echo "== $name: loom train ${model_args[*]} $options" >&2
    start=$(date +%s)
    # shellcheck disable=SC2086  # the options are words
    "$loom" train "${model_args[@]}" --train "$data/train.en" "$data/train.de" \
      --valid "$data/val.en" "$data/val.de" --out "$run" --max-tokens 4096 \
      --threads "$threads" --seed 1 --keep "$average" --progress lines $options \
      > "$run.log" 2>&1 || { echo "== $name: training failed; see $run.log" >&2; exit 1; }
    echo $(( $(date +%s) - start )) > "$run.train_s"
    cp "$run/model.safetensors" "$run/last.safetensors"
  fi
  "$loom" average "$run" --last "$average" -o "$run/avg.safetensors" > /dev/null
  : > "$run.scores"
  for beam in $beams; do
    for alpha in $alphas; do
      # Greedy search has no length penalty to vary.
      [[ "$beam" == 1 && "$alpha" != "${alphas%% *}" ]] && continue
      hyp="$run/val.avg.beam$beam.alpha$alpha.de"
      "$loom" translate --model "$run" --weights "$run/avg.safetensors" --beam "$beam" \
        --alpha "$alpha" --threads "$threads" --input "$data/val.en" > "$hyp" 2> /dev/null
      score=$("$loom" score --ref "$data/val.de" --input "$hyp" --json)
      echo "$beam $alpha $score" >> "$run.scores"
    done
  done
  runs+=("$run")
  echo "== $name: scored" >&2
done < "$here/multi30k_sweep.tsv"

[[ ${#runs[@]} -gt 0 ]] || { echo "multi30k_sweep.sh: no row matches --only" >&2; exit 2; }
python3 "$here/multi30k_sweep_table.py" "${runs[@]}" | tee "$out/results.md"
"$loom" plot "${runs[@]}" -o "$out/curves.png"
echo "curves: $out/curves.png" >&2
