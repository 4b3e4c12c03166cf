#!/usr/bin/env bash
# Decoding with its controls on, Loom beside CTranslate2 given the same
# options, on a trained model and real sentences.
#
#   bench/ct2_controls.sh MODELS DATA [NAME] [RUNS] [THREADS]
#
# MODELS holds NAME (a Loom model directory; default multi30k) and NAME.ct2
# (bench/ct2_convert.py's conversion of it, the same weights); DATA holds
# val.en and val.de. Every cell translates all of val.en at batch 32 with
# beam 1, RUNS timed runs (default 3) on THREADS threads (default 2), Loom's
# `loom translate --time-runs` and bench/ct2_translate.py back to back,
# ROUNDS times (default 3; each round's ratio is taken from its own pair,
# so that the machine's drift between rounds cancels):
#
#   plain      greedy search, no control
#   prefix     each translation starts with its reference's first word
#   sampling   top-k 10 at temperature 0.8 (seeded)
#   no-repeat  no 3-gram twice
#   all        prefix, sampling and no-repeat together
#
# Each run's JSON line (both engines' fields, with "cell") goes to stdout; a
# table of sentences per second and Loom over CTranslate2 to stderr.
set -euo pipefail
MODELS=$1
DATA=$2
NAME=${3:-multi30k}
RUNS=${4:-3}
THREADS=${5:-2}
ROUNDS=${ROUNDS:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOOM=${LOOM:-$ROOT/build/bin/loom}
PY=${PYTHON:-/usr/bin/python3}
MODEL=$MODELS/$NAME
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# The prefixes: each reference's first word.
awk '{print $1}' "$DATA/val.de" > "$WORK/prefix.txt"
OUT=$WORK/records.jsonl

# cell NAME FLAGS...: the flags are `loom translate`'s and ct2_translate.py's
# own (they share the names).
cell() {
  local name=$1
  shift
  for round in $(seq "$ROUNDS"); do
    pair "$name" "$round" "$@"
  done
}

# pair NAME ROUND FLAGS...: one round of a cell.
pair() {
  local name=$1 round=$2
  shift 2
  "$LOOM" translate --model "$MODEL" --input "$DATA/val.en" --batch 32 \
    --beam 1 --alpha 0 --threads "$THREADS" --time-runs "$RUNS" "$@" \
    2> "$WORK/loom.err" > "$WORK/loom.txt"
  tail -1 "$WORK/loom.err" | "$PY" -c 'import json,sys; d=json.loads(sys.stdin.read()); d["cell"]=sys.argv[1]; d["round"]=int(sys.argv[2]); print(json.dumps(d, sort_keys=True))' "$name" "$round" | tee -a "$OUT"
  "$PY" "$ROOT/bench/ct2_translate.py" --model "$MODEL.ct2" \
    --spm "$MODEL/spm.model" --input "$DATA/val.en" --batch 32 --beam 1 \
    --threads "$THREADS" --length-penalty 0 --time-runs "$RUNS" "$@" \
    2> "$WORK/ct2.err" > "$WORK/ct2.txt"
  tail -1 "$WORK/ct2.err" | "$PY" -c 'import json,sys; d=json.loads(sys.stdin.read()); d["cell"]=sys.argv[1]; d["round"]=int(sys.argv[2]); print(json.dumps(d, sort_keys=True))' "$name" "$round" | tee -a "$OUT"
}

SAMPLING="--sampling-topk 10 --sampling-temperature 0.8 --seed 7"
cell plain
cell prefix --target-prefix "$WORK/prefix.txt"
cell sampling $SAMPLING
cell no-repeat --no-repeat-ngram-size 3
cell all --target-prefix "$WORK/prefix.txt" $SAMPLING --no-repeat-ngram-size 3

"$PY" - "$OUT" >&2 <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
import statistics
print("| cell | Loom sentences/s | CTranslate2 sentences/s | Loom / CTranslate2, per round | target tokens Loom / CTranslate2 |")
print("| --- | ---: | ---: | ---: | ---: |")
for cell in ["plain", "prefix", "sampling", "no-repeat", "all"]:
    loom = {r["round"]: r for r in rows if r["cell"] == cell and r["system"] == "loom"}
    ct2 = {r["round"]: r for r in rows if r["cell"] == cell and r["system"] == "ctranslate2"}
    rounds = sorted(set(loom) & set(ct2))
    if not rounds:
        continue
    ratios = [loom[r]["sentences_per_s"] / ct2[r]["sentences_per_s"] for r in rounds]
    print("| %s | %.0f | %.0f | %.2f× (%s) | %d / %d |" % (
        cell, statistics.median(loom[r]["sentences_per_s"] for r in rounds),
        statistics.median(ct2[r]["sentences_per_s"] for r in rounds),
        statistics.median(ratios), ", ".join("%.2f" % x for x in ratios),
        loom[rounds[0]]["target_tokens"], ct2[rounds[0]]["target_tokens"]))
PYEOF
