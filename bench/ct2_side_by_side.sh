#!/usr/bin/env bash
# CPU decoding, Loom beside CTranslate2, at one shape in one run.
#
#   bench/ct2_side_by_side.sh [RUNS] [THREADS]      (defaults: 2 runs, 2 threads)
#
# The shape is bench/configs/base-8k.txtpb (base, post-norm, a tied 8000-token
# vocabulary): a batch of 32 sentences of 30 source tokens decoded for exactly
# 30 target tokens, greedy and with beam 4; then one sentence at a time
# (batch 1, beam 4) for latency. Each cell runs Loom's `loom bench decode`
# and bench/ct2_bench.py back to back, RUNS times, so both see the same
# machine. Target tokens/s = 32 * 30 / seconds per batch, whatever the beam.
#
# CTranslate2 runs when its Python module imports (../shared/peers/build_ct2.sh
# builds it; PYTHONPATH and LD_LIBRARY_PATH as that script says); it runs with
# its default ISA and with CT2_FORCE_CPU_ISA=AVX512, and the faster counts.
# Precisions: Loom's fp32, int8 and bf16 (bf16 where the CPU has AVX512-BF16;
# LOOM_PRECISIONS overrides) against CTranslate2's float32 and int8. With
# LOOM_BASELINE=PATH, that `loom` (an earlier build) runs in every cell too,
# right after this one, as system "loom-baseline".
#
# Every result is one JSON line on stdout; the table at the end is on stderr.
set -euo pipefail
RUNS=${1:-2}
THREADS=${2:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOOM=${LOOM:-$ROOT/build/bin/loom}
CONFIG=$ROOT/bench/configs/base-8k.txtpb
PY=${PYTHON:-/usr/bin/python3}
if grep -q ' avx512_bf16' /proc/cpuinfo 2>/dev/null; then
  LOOM_PRECISIONS=${LOOM_PRECISIONS:-fp32 int8 bf16}
else
  LOOM_PRECISIONS=${LOOM_PRECISIONS:-fp32 int8}
fi
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT

have_ct2=1
if ! "$PY" -c 'import ctranslate2' 2>/dev/null; then
  have_ct2=0
  echo "ct2_side_by_side: the ctranslate2 module does not import; Loom alone" >&2
fi

# tag CELL RUN [SYSTEM]: one JSON line from stdin, with the cell and the run
# added (and its system renamed to SYSTEM when given).
tag() {
  "$PY" -c 'import json,sys; d=json.loads(sys.stdin.read()); d["cell"]=sys.argv[1]; d["run"]=int(sys.argv[2]); d["system"]=sys.argv[3] if len(sys.argv) > 3 else d["system"]; print(json.dumps(d, sort_keys=True))' \
    "$@" | tee -a "$OUT"
}

# CTranslate2 refuses CT2_FORCE_CPU_ISA=AVX512 on a CPU without it.
CT2_ISAS=default
if grep -q ' avx512f' /proc/cpuinfo 2>/dev/null; then
  CT2_ISAS="default AVX512"
fi

# cell NAME BATCH BEAM STEPS WARMUP RUN
cell() {
  local name=$1 batch=$2 beam=$3 steps=$4 warmup=$5 run=$6
  for precision in $LOOM_PRECISIONS; do
    "$LOOM" bench decode --config "$CONFIG" --batch "$batch" --src-len 30 \
      --tgt-len 30 --beam "$beam" --threads "$THREADS" --steps "$steps" \
      --warmup "$warmup" --precision "$precision" | tag "$name" "$run"
    # An earlier build beside it, in the same cell, to tell a change from
    # the machine's drift.
    [ -z "${LOOM_BASELINE:-}" ] ||
      "$LOOM_BASELINE" bench decode --config "$CONFIG" --batch "$batch" \
        --src-len 30 --tgt-len 30 --beam "$beam" --threads "$THREADS" \
        --steps "$steps" --warmup "$warmup" --precision "$precision" |
      tag "$name" "$run" loom-baseline
  done
  [ $have_ct2 = 1 ] || return 0
  for compute in float32 int8; do
    for isa in $CT2_ISAS; do
      if [ $isa = AVX512 ]; then export CT2_FORCE_CPU_ISA=AVX512; else unset CT2_FORCE_CPU_ISA; fi
      "$PY" "$ROOT/bench/ct2_bench.py" --config "$CONFIG" --batch "$batch" \
        --src-len 30 --tgt-len 30 --beam "$beam" --threads "$THREADS" \
        --steps "$steps" --warmup "$warmup" --compute-type "$compute" |
        tag "$name" "$run"
    done
  done
  unset CT2_FORCE_CPU_ISA
}

for run in $(seq "$RUNS"); do
  echo "== run $run of $RUNS" >&2
  cell greedy 32 1 5 1 "$run"
  cell beam4 32 4 3 1 "$run"
  cell latency 1 4 20 3 "$run"
done

"$PY" - "$OUT" >&2 <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def key(d):
    if d["system"].startswith("loom"):
        return d["system"] + " " + d["precision"]
    return "ct2 " + d["compute_type"]
cells = ["greedy", "beam4", "latency"]
systems = sorted({key(d) for d in rows})
print("| system | greedy tok/s | beam 4 tok/s | batch 1, beam 4: ms/sentence |")
print("| --- | ---: | ---: | ---: |")
for s in systems:
    out = []
    for c in cells:
        # Per run, CTranslate2's better ISA: the highest rate, the lowest time.
        vals = {}
        for d in rows:
            if key(d) != s or d["cell"] != c:
                continue
            best = min if c == "latency" else max
            v = d["step_ms_median"] if c == "latency" else d["tokens_per_s"]
            vals[d["run"]] = best(vals.get(d["run"], v), v)
        fmt = "%.1f" if c == "latency" else "%.0f"
        out.append("–".join(fmt % vals[r] for r in sorted(vals)) or "")
    print("| %s | %s |" % (s, " | ".join(out)))
EOF
