#!/usr/bin/env bash
# The device bundle's `learn` stage (scripts/gpu-check.sh): the multi30k
# recipe prepared for a GPU (`loom prepare --device cuda`), the Multi30k
# corpus, and the first 100 training losses of the same run on this CPU,
# which the GPU's are held to.
#
# Usage: scripts/prepare-gpu-learn.sh BUILD_DIR OUT_DIR DATA_DIR
# (DATA_DIR holds train.en, train.de, val.en, val.de; CUDA_ARCH, default
# sm_90; LEARN_THREADS for the CPU run, default 2)
set -euo pipefail
build=$1
out=$2
data=$3
loom=$build/bin/loom
recipe=(--preset multi30k --max-tokens 4096 --warmup 2000 --lr-scale 2.5 --seed 1)
for f in train.en train.de val.en val.de; do
  [ -f "$data/$f" ] || { echo "prepare-gpu-learn: no $data/$f" >&2; exit 1; }
done
rm -rf "$out"
mkdir -p "$out/data"
cp "$data"/train.en "$data"/train.de "$data"/val.en "$data"/val.de "$out/data/"
"$loom" prepare "${recipe[@]}" --train "$data/train.en" "$data/train.de" \
  --out "$out/prep" --device cuda --cuda-arch "${CUDA_ARCH:-sm_90}" > /dev/null
# The bundle's own loom-train runs it (with its libraries): the folder's
# copy of the binary and its helpers stay here.
rm -rf "$out/prep/loom-train" "$out/prep/loom-plot" "$out/prep/lib"
# The same run on this CPU for 100 steps: the same vocabulary (same seed),
# the same initial parameters, batches and dropout masks.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$loom" prepare "${recipe[@]}" --train "$data/train.en" "$data/train.de" \
  --out "$work/cpu" > /dev/null
cmp "$work/cpu/spm.model" "$out/prep/spm.model"
"$work/cpu/loom-train" --train "$data/train.en" "$data/train.de" --steps 100 \
  --log-every 1 --progress lines --no-plot --seed 1 \
  --threads "${LEARN_THREADS:-2}" > /dev/null
python3 - "$work/cpu/metrics.jsonl" > "$out/cpu-losses.txt" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["type"] == "train":
        print(r["step"], repr(r["loss"]))
PY
echo "prepare-gpu-learn: $out ($(du -sh "$out" | cut -f1)), $(wc -l < "$out/cpu-losses.txt") CPU losses"
