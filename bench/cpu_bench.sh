#!/usr/bin/env bash
# Times Loom against PyTorch on the CPU, in one run on one machine.
#
#   bench/cpu_bench.sh [--preset base] [--batch 32] [--src-len 30]
#       [--tgt-len 30] [--threads 2] [--train-steps 20] [--train-warmup 3]
#       [--decode-steps 5] [--decode-warmup 1] [--out bench-results.jsonl]
#       [--gemm-reps 3] [--gemm-min-time 0.5] [--check] [--no-loom]
#       [--omp-wait-policy ACTIVE|PASSIVE] [--loom build/bin/loom]
#       [--gemm-bench build/bin/gemm_bench] [--python /usr/bin/python3]
#
# In this order, every program with the same number of threads
# (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and MKL_NUM_THREADS are exported):
#   1. the BLAS ceiling: gemm_bench in model mode times OpenBLAS's and
#      oneDNN's sgemm at every GEMM shape of the model's training step and
#      greedy decoding at this batch and these lengths;
#   2. Loom train:      build/bin/loom bench train ...
#   3. PyTorch train:   bench/pytorch_bench.py train ...
#   4. Loom decode:     build/bin/loom bench decode ...
#   5. PyTorch decode:  bench/pytorch_bench.py decode ...
# Then it prints a Markdown table (metric | Loom | PyTorch | ratio | target)
# and the exact command lines, ready for docs/PERFORMANCE.md.
#
# The ceiling. For each GEMM shape s of a training step, with c_s calls per
# step of f_s = 2*M*N*K FLOPs each, r_s is the faster of the two libraries'
# median GFLOP/s (over --gemm-reps repetitions). The train ceiling is
#     sum_s c_s*f_s / sum_s (c_s*f_s / r_s),
# the rate at which the step's GEMMs would run if each ran at the best
# measured library rate for its shape and nothing else took any time: each
# shape weighs by the time it takes (for `base` at 32 x 30 tokens the FFN
# has 40% of the GEMM FLOPs, the attention projections 30%, the generator
# 30%). Attention's QK^T and PV are not BLAS-sized and not in it (under 1%
# of `base`'s model FLOPs at 30 tokens). Loom's train model GFLOP/s is held
# against it. The decode ceiling is the same over one greedy decoding's
# GEMMs (mostly batch x d_model by d_model x N, where a BLAS is far from its
# peak) and is reported, not targeted.
#
# The results file gets one JSON object per line: {"source", "command",
# "result"} where result is the raw JSON line a program printed (one line per
# GEMM benchmark), and last a {"source": "summary"} line with the ceilings
# and ratios. --no-loom times the peers alone (for checking them while Loom's
# `bench` command is missing); --check has pytorch_bench.py first verify its
# cached greedy decoder against naive decoding. --omp-wait-policy exports
# OMP_WAIT_POLICY to every program (unset by default: libgomp spins a while
# before it sleeps, which costs PyTorch dearly when other processes want the
# cores, so timings are only meaningful on an otherwise idle machine).
set -euo pipefail

preset=base
batch=32
src_len=30
tgt_len=30
threads=2
train_steps=20
train_warmup=3
decode_steps=5
decode_warmup=1
out=bench-results.jsonl
gemm_reps=3
gemm_min_time=0.5
check=0
with_loom=1
loom=build/bin/loom
gemm_bench=build/bin/gemm_bench
python=/usr/bin/python3
omp_wait_policy=

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
  exit "${1:-0}"
}

die() {
  echo "cpu_bench.sh: $*" >&2
  exit 1
}

while (($#)); do
  case "$1" in
    -h | --help) usage 0 ;;
    --check) check=1; shift; continue ;;
    --no-loom) with_loom=0; shift; continue ;;
  esac
  (($# >= 2)) || die "$1 needs a value (see --help)"
  case "$1" in
    --preset) preset=$2 ;;
    --batch) batch=$2 ;;
    --src-len) src_len=$2 ;;
    --tgt-len) tgt_len=$2 ;;
    --threads) threads=$2 ;;
    --train-steps) train_steps=$2 ;;
    --train-warmup) train_warmup=$2 ;;
    --decode-steps) decode_steps=$2 ;;
    --decode-warmup) decode_warmup=$2 ;;
    --out) out=$2 ;;
    --gemm-reps) gemm_reps=$2 ;;
    --gemm-min-time) gemm_min_time=$2 ;;
    --loom) loom=$2 ;;
    --gemm-bench) gemm_bench=$2 ;;
    --python) python=$2 ;;
    --omp-wait-policy) omp_wait_policy=$2 ;;
    *) die "unknown flag '$1' (see --help)" ;;
  esac
  shift 2
done

for n in batch src_len tgt_len threads train_steps decode_steps gemm_reps; do
  [[ ${!n} =~ ^[1-9][0-9]*$ ]] || die "--${n//_/-} must be a positive integer, got '${!n}'"
done
[[ -z $omp_wait_policy || $omp_wait_policy =~ ^(ACTIVE|PASSIVE)$ ]] ||
  die "--omp-wait-policy must be ACTIVE or PASSIVE, got '$omp_wait_policy'"
for n in train_warmup decode_warmup; do
  [[ ${!n} =~ ^[0-9]+$ ]] || die "--${n//_/-} must be a non-negative integer, got '${!n}'"
done

# The results file is named from where the script is called; the programs
# run from the repository root, and the commands are printed from there.
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

# --- preflight: fail before spending minutes on the first measurement -----
[[ -x $python ]] || die "no Python at $python (pass --python)"
"$python" -c 'import torch, numpy' 2>/dev/null ||
  die "$python cannot import torch and numpy (Debian: apt-get install python3-torch)"
if ((with_loom)); then
  [[ -x $loom ]] || die "no loom binary at $loom: build it (make build) or pass --loom"
  if ! "$loom" --help 2>&1 | grep -qE '^[[:space:]]+bench([[:space:]]|$)'; then
    die "$loom has no 'bench' subcommand, so Loom cannot be timed; rebuild it from a tree whose CLI has 'loom bench train|decode' (or pass --no-loom to time only the BLAS and PyTorch)"
  fi
fi
[[ -x $gemm_bench ]] ||
  die "no gemm_bench at $gemm_bench: it is built when Google Benchmark, OpenBLAS and oneDNN are found (make build), or pass --gemm-bench"
config=$("$python" bench/pytorch_bench.py config --preset "$preset") ||
  die "unknown preset '$preset'"
model_flags=$("$python" -c '
import json, sys
c = json.loads(sys.argv[1])
flags = {"d-model": "d_model", "d-ff": "d_ff", "vocab": "tgt_vocab",
         "encoder-layers": "encoder_layers", "decoder-layers": "decoder_layers"}
print(" ".join(f"--{flag}={c[key]}" for flag, key in flags.items()))
' "$config")
# shellcheck disable=SC2206  # the flags are single words
gemm_cmd=("$gemm_bench" $model_flags "--batch=$batch" "--src-len=$src_len"
          "--tgt-len=$tgt_len")
"${gemm_cmd[@]}" --benchmark_list_tests=true 2>/dev/null | grep -q '^openblas/.*/NT' ||
  die "$gemm_bench does not take model flags (--d-model= ...): rebuild it from bench/gemm_bench.cpp"

export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads MKL_NUM_THREADS=$threads
env_prefix="OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads MKL_NUM_THREADS=$threads"
if [[ -n $omp_wait_policy ]]; then
  export OMP_WAIT_POLICY=$omp_wait_policy
  env_prefix+=" OMP_WAIT_POLICY=$omp_wait_policy"
else
  unset OMP_WAIT_POLICY
fi

: >"$out"
load_before=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# record SOURCE COMMAND JSON_LINE: appends {"source", "command", "result"}.
record() {
  "$python" -c '
import json, sys
print(json.dumps({"source": sys.argv[1], "command": sys.argv[2],
                  "result": json.loads(sys.argv[3])}))
' "$1" "$2" "$3" >>"$out"
}

# measure SOURCE CMD...: runs CMD, keeps the last JSON line of its stdout.
measure() {
  local source=$1
  shift
  local printable
  printable="$env_prefix $(printf '%q ' "$@")"
  printable=${printable% }
  echo "== $source: $printable" >&2
  local started=$SECONDS
  if ! "$@" >"$scratch/stdout" 2>"$scratch/stderr"; then
    cat "$scratch/stderr" >&2
    die "$source failed: $printable"
  fi
  local line
  line=$(grep '^{' "$scratch/stdout" | tail -n 1 || true)
  [[ -n $line ]] || { cat "$scratch/stdout" "$scratch/stderr" >&2; die "$source printed no JSON line"; }
  "$python" -c 'import json, sys; json.loads(sys.argv[1])' "$line" 2>/dev/null ||
    die "$source printed a line that is not JSON: $line"
  echo "   $((SECONDS - started)) s" >&2
  record "$source" "$printable" "$line"
}

sizes=(--preset "$preset" --batch "$batch" --src-len "$src_len" --tgt-len "$tgt_len")
train_flags=("${sizes[@]}" --steps "$train_steps" --warmup "$train_warmup" --threads "$threads")
decode_flags=("${sizes[@]}" --steps "$decode_steps" --warmup "$decode_warmup" --threads "$threads")
check_flag=()
((check)) && check_flag=(--check)

# 1. The BLAS ceiling: one process per library, so that neither library's
# idle threads (OpenBLAS's pthreads, oneDNN's OpenMP team) compete with the
# other's.
for library in openblas onednn; do
  gemm_run=("${gemm_cmd[@]}" "--benchmark_filter=^$library/" --benchmark_format=json
            "--benchmark_repetitions=$gemm_reps" --benchmark_report_aggregates_only=true
            "--benchmark_min_time=$gemm_min_time")
  gemm_printable="$env_prefix $(printf '%q ' "${gemm_run[@]}")"
  gemm_printable=${gemm_printable% }
  echo "== gemm_bench $library: $gemm_printable" >&2
  started=$SECONDS
  "${gemm_run[@]}" >"$scratch/gemm.json" 2>"$scratch/gemm.err" ||
    { cat "$scratch/gemm.err" >&2; die "gemm_bench failed: $gemm_printable"; }
  echo "   $((SECONDS - started)) s" >&2
  "$python" -c '
import json, sys
report = json.load(open(sys.argv[1]))
runs = report["benchmarks"]
# With repetitions, the medians; with one run, the runs themselves.
medians = [r for r in runs if r.get("aggregate_name") == "median"]
for r in medians or [r for r in runs if r.get("run_type") == "iteration"]:
    print(json.dumps({"source": "gemm_bench", "command": sys.argv[2], "result": r}))
' "$scratch/gemm.json" "$gemm_printable" >>"$out"
done

# 2-5. Loom and PyTorch, train then decode.
((with_loom)) && measure "loom train" "$loom" bench train "${train_flags[@]}"
measure "pytorch train" "$python" bench/pytorch_bench.py train "${train_flags[@]}"
((with_loom)) && measure "loom decode" "$loom" bench decode "${decode_flags[@]}"
measure "pytorch decode" "$python" bench/pytorch_bench.py decode "${decode_flags[@]}" "${check_flag[@]}"

# The table.
machine=$( (lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1) || true)
debian=$(cat /etc/debian_version 2>/dev/null || echo unknown)
load_after=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?")
"$python" - "$out" "$preset" "$batch" "$src_len" "$tgt_len" "$threads" \
  "${machine:-unknown CPU}" "$(nproc)" "$debian" "$load_before" "$load_after" <<'EOF'
import json
import sys

(path, preset, batch, src_len, tgt_len, threads, cpu, cpus, debian,
 load_before, load_after) = sys.argv[1:]
lines = [json.loads(l) for l in open(path)]
runs = {l["source"]: l for l in lines if l["source"] != "gemm_bench"}
gemms = [l["result"] for l in lines if l["source"] == "gemm_bench"]

# --- the ceilings ---
shapes = {}
for g in gemms:
    if g.get("error_occurred"):
        print(f"warning: {g['run_name']}: {g.get('error_message')}",
              file=sys.stderr)
        continue
    library, shape = g["run_name"].split("/", 1)
    shape = shape.rsplit("/real_time", 1)[0]
    entry = shapes.setdefault(shape, {"train_calls": g["train_calls"],
                                      "decode_calls": g["decode_calls"],
                                      "gflop": g["gflop_per_call"],
                                      "label": g.get("label", "")})
    entry[library] = g["GFLOP/s"]


def ceiling(kind, libraries):
    work = time = 0.0
    for s in shapes.values():
        rate = max(s.get(lib, 0.0) for lib in libraries)
        calls = s[kind + "_calls"]
        if calls and rate > 0:
            work += calls * s["gflop"]
            time += calls * s["gflop"] / rate
    return work / time if time else float("nan")


both = ("openblas", "onednn")
ceilings = {kind: {"best": ceiling(kind, both),
                   "openblas": ceiling(kind, ("openblas",)),
                   "onednn": ceiling(kind, ("onednn",))}
            for kind in ("train", "decode")}


def result(source):
    return runs[source]["result"] if source in runs else None


def fmt(x, digits=1):
    return "—" if x is None else f"{x:,.{digits}f}"


def ratio(a, b):
    return None if a is None or b is None or not b else a / b


def verdict(value, goal, above):
    if value is None:
        return "not measured"
    met = value >= goal if above else value < goal
    return "met" if met else "NOT met"


def rate_spread(r):
    """tokens/s at the median step and at the p90..p10 steps."""
    if r is None:
        return "—"
    text = f"{r['tokens_per_s']:,.0f}"
    t = r.get("tokens_per_step")
    if t and r.get("step_ms_p90") and r.get("step_ms_p10"):
        text += (f" ({t / r['step_ms_p90'] * 1e3:,.0f}–"
                 f"{t / r['step_ms_p10'] * 1e3:,.0f})")
    return text


def ms_spread(r):
    if r is None:
        return "—"
    spread = [r.get(k) for k in ("step_ms_min", "step_ms_p10", "step_ms_p90",
                                 "step_ms_max")]
    return (f"{r['step_ms_median']:,.1f} [" +
            ", ".join("?" if x is None else f"{x:,.1f}" for x in spread) + "]")


# Both sides must count tokens and FLOPs by the same definition.
warnings = []
for mode, loom_run, torch_run in (("train", runs.get("loom train"),
                                   runs.get("pytorch train")),
                                  ("decode", runs.get("loom decode"),
                                   runs.get("pytorch decode"))):
    if not loom_run or not torch_run:
        continue
    for key in ("model_gflops_per_step", "tokens_per_step"):
        a, b = loom_run["result"].get(key), torch_run["result"].get(key)
        if a is None or b is None or abs(a - b) > 1e-3 * abs(b):
            warnings.append(f"{mode}: Loom reports {key} = {a}, PyTorch {b}; "
                            f"the two sides count differently")


def mib(r):
    return None if r is None else r["peak_rss_bytes"] / 2**20


def get(r, key):
    return None if r is None else r[key]


lt, pt = result("loom train"), result("pytorch train")
ld, pd = result("loom decode"), result("pytorch decode")
summary = {"source": "summary", "ceilings_gflops_per_s": ceilings,
           "warnings": warnings}
rows = []

q = ratio(get(lt, "tokens_per_s"), get(pt, "tokens_per_s"))
summary["train_tokens_ratio"] = q
rows.append(("train tokens/s, median (p90–p10 steps)", rate_spread(lt),
             rate_spread(pt), fmt(q, 2) + "×" if q else "—",
             f"≥ 1.5× — {verdict(q, 1.5, True)}"))
rows.append(("train step ms, median [min, p10, p90, max]", ms_spread(lt),
             ms_spread(pt), fmt(ratio(get(lt, "step_ms_median"),
                                      get(pt, "step_ms_median")), 2) + "×"
             if lt else "—", "—"))
c = ceilings["train"]["best"]
share = ratio(get(lt, "model_gflops_per_s"), c)
summary["train_ceiling_share"] = share
pshare = ratio(get(pt, "model_gflops_per_s"), c)
rows.append((f"train model GFLOP/s ({pt['model_gflops_per_step']:,.4g} GFLOP/step; "
             f"ceiling {c:,.1f})",
             fmt(get(lt, "model_gflops_per_s")) +
             (f" ({share:.0%} of ceiling)" if share else ""),
             fmt(get(pt, "model_gflops_per_s")) +
             (f" ({pshare:.0%} of ceiling)" if pshare else ""),
             f"{share:.0%} of ceiling" if share else "—",
             f"≥ 60% of ceiling — {verdict(share, 0.6, True)}"))
q = ratio(mib(lt), mib(pt))
summary["train_peak_rss_ratio"] = q
rows.append(("train peak RSS MiB", fmt(mib(lt), 0), fmt(mib(pt), 0),
             fmt(q, 2) + "×" if q else "—",
             f"below PyTorch's — {verdict(q, 1.0, False)}"))
q = ratio(get(ld, "tokens_per_s"), get(pd, "tokens_per_s"))
summary["decode_tokens_ratio"] = q
rows.append(("decode tokens/s, median (p90–p10 steps)", rate_spread(ld),
             rate_spread(pd), fmt(q, 2) + "×" if q else "—",
             f"≥ 2× — {verdict(q, 2.0, True)}"))
rows.append(("decode step ms, median [min, p10, p90, max]", ms_spread(ld),
             ms_spread(pd), fmt(ratio(get(ld, "step_ms_median"),
                                      get(pd, "step_ms_median")), 2) + "×"
             if ld else "—", "—"))
c = ceilings["decode"]["best"]
rows.append((f"decode model GFLOP/s ({pd['model_gflops_per_step']:,.4g} GFLOP/step; "
             f"ceiling {c:,.1f})", fmt(get(ld, "model_gflops_per_s")),
             fmt(get(pd, "model_gflops_per_s")),
             fmt(ratio(get(ld, "model_gflops_per_s"),
                       get(pd, "model_gflops_per_s")), 2) + "×" if ld else "—",
             "—"))
rows.append(("decode peak RSS MiB", fmt(mib(ld), 0), fmt(mib(pd), 0),
             fmt(ratio(mib(ld), mib(pd)), 2) + "×" if ld else "—", "—"))
with open(path, "a") as f:
    f.write(json.dumps(summary) + "\n")

print(f"\n### Loom against PyTorch on the CPU: `{preset}`, batch {batch} × "
      f"{src_len} source + {tgt_len} target tokens, {threads} threads\n")
print(f"{cpu}, {cpus} CPUs, Debian {debian}; PyTorch {pt['torch_version']} "
      f"({pt['blas']}); the same model, batch, Adam step and thread count "
      f"on both sides. Train: {pt['steps']} timed steps after "
      f"{pt['warmup']} untimed, {pt['tokens_per_step']} tokens "
      f"(source + target) per step. Decode: {pd['steps']} timed greedy "
      f"decodings after {pd['warmup']} untimed, each the encoder plus exactly "
      f"{tgt_len} tokens for {batch} sentences ({pd['tokens_per_step']} "
      f"generated tokens). Ratios are Loom / PyTorch. Load average "
      f"(1 min) {load_before} before the run, {load_after} after.\n")
for w in warnings:
    print(f"**Warning**: {w}.\n")
print("| metric | Loom | PyTorch | ratio | target |")
print("| --- | --- | --- | --- | --- |")
for row in rows:
    print("| " + " | ".join(row) + " |")
if "cache_check" in pd:
    ok = pd["cache_check"]["ok"]
    print(f"\nPyTorch's cached greedy decoder against naive decoding: "
          f"{'same tokens' if ok else 'MISMATCH'}.")

print(f"\nThe ceiling: per GEMM shape the faster of OpenBLAS and oneDNN "
      f"(median GFLOP/s), weighted by the shape's FLOPs in the step: "
      f"train {ceilings['train']['best']:,.1f} GFLOP/s (OpenBLAS alone "
      f"{ceilings['train']['openblas']:,.1f}, oneDNN alone "
      f"{ceilings['train']['onednn']:,.1f}); decode "
      f"{ceilings['decode']['best']:,.1f} (OpenBLAS "
      f"{ceilings['decode']['openblas']:,.1f}, oneDNN "
      f"{ceilings['decode']['onednn']:,.1f}).\n")
total = {k: sum(s[k + "_calls"] * s["gflop"] for s in shapes.values())
         for k in ("train", "decode")}
print("| GEMM M×N×K | layout | share of train GEMM FLOPs | share of decode "
      "GEMM FLOPs | OpenBLAS GFLOP/s | oneDNN GFLOP/s |")
print("| --- | --- | --- | --- | --- | --- |")
for name, s in sorted(shapes.items(), key=lambda kv: (
        -kv[1]["train_calls"] * kv[1]["gflop"],
        -kv[1]["decode_calls"] * kv[1]["gflop"])):
    dims, layout = name.split("/")
    shares = [s[k + "_calls"] * s["gflop"] / total[k] if total[k] else 0
              for k in ("train", "decode")]
    print(f"| {dims.replace('x', '×')} | {layout} | {shares[0]:.1%} | "
          f"{shares[1]:.1%} | {fmt(s.get('openblas'))} | "
          f"{fmt(s.get('onednn'))} |")

print("\n```sh")
printed = set()
for l in lines:
    command = l.get("command")
    if command and command not in printed:
        printed.add(command)
        print(command)
print("```")
EOF
echo "Raw results: $out" >&2
