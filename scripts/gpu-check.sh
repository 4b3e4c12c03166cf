#!/usr/bin/env bash
# The GPU check, run from an unpacked device bundle (scripts/device-bundle.sh
# copies this file into it as `gpu-check`; docs/GPU.md says what each stage
# proves):
#
#   mkdir B && tar -xJf device-bundle.tar.xz -C B && B/gpu-check OUTDIR
#   B/gpu-check --device cpu OUTDIR     # the short dry run `make test` does
#
# Stages, in the order of what they tell us, each in its own process with
# its own timeout:
#
#   preflight    the GPU, driver and runtime versions, where the driver,
#                cuBLASLt, cuDNN and NCCL were found (PyTorch's NVIDIA
#                packages included), the environment
#   conformance  every device primitive and library kernel on the GPU
#   golden       every case of the kernel suites (golden/: inputs and the
#                reference interpreter's results, written where the suites
#                run) replayed on the GPU, each failure named by kernel and
#                case
#   agreement    whole models (tiny, multi30k, base) on the GPU against the
#                CPU: log-probabilities, every gradient, three Adam steps,
#                greedy decoding; and every kernel of each model replayed
#                alone on the GPU with the CPU's inputs, named where it
#                parts from the CPU
#   nccl         an all-reduce over this machine's GPUs
#   sync         a failing suite again with every launch synchronous
#                (CUDA_LAUNCH_BLOCKING, LOOM_SYNC_EVERY_STEP), so that an
#                asynchronous fault names the step and kernel that made it;
#                appended to the suite's log
#   sanitizer    the conformance suite's CUDA cases and the tiny model's
#                agreement under compute-sanitizer's memcheck
#   bench        loom-bench on `base` (a train step, greedy and beam-4
#                decoding of 32 sentences of 30 tokens), then PyTorch on the
#                same model and shapes (bench/pytorch_gpu_bench.py: eager
#                and torch.compile, fp32, TF32 and bf16)
#   learn        where the bundle has learn/ (make gpu-check M30K_DATA=DIR):
#                the multi30k recipe trained on Multi30k by loom-train on
#                the GPU for GPU_CHECK_LEARN_SECONDS (default 150); its
#                first 100 losses against the same run's on a CPU, tokens
#                per second, greedy BLEU on val at the end
#
# GPU_CHECK_STAGES (default all: "conformance golden agreement nccl
# sanitizer bench learn") names the stages to run; preflight always runs.
#
# With --device cuda (the default) LOOM_REQUIRE_DEVICE=cuda makes a GPU that
# does not open fail every test instead of skipping it, a stage in which a
# CUDA case skipped fails, and one that ran no test fails: a run with no GPU
# coverage never reads as a pass. --device cpu runs every stage on the CPU
# at small sizes (the CPU against itself on one thread, tiny only, no
# sanitizer), so that the script, the archive and the report are exercised
# wherever there is no GPU.
#
# OUTDIR gets at most 8 files: gpu-report.md (a table of stage, verdict,
# figures and the first failing check), gpu-report.json, and the logs
# (NCCL's in conformance.log). The exit status is 0 only when every stage
# that ran passed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
device=cuda
if [ "${1:-}" = "--device" ]; then
  device=${2:-}
  shift 2
fi
case $device in cuda | cpu) ;; *)
  echo "usage: gpu-check [--device cuda|cpu] OUTDIR" >&2
  exit 2
  ;;
esac
out=${1:?usage: gpu-check [--device cuda|cpu] OUTDIR}
mkdir -p "$out"
if [ "$device" = cuda ]; then
  export LOOM_REQUIRE_DEVICE=cuda
else
  export LOOM_AGREEMENT_DEVICE=cpu
fi

# Folders holding the NVIDIA libraries the runtime opens by name, the ones
# inside Python packages (nvidia/nccl/lib, nvidia/cudnn/lib, ...) included;
# they follow the bundle's own libraries and precede CUDA_LIB.
lib_path=""
add_dir() {
  case ":$lib_path:" in *":$1:"*) return ;; esac
  lib_path=${lib_path:+$lib_path:}$1
}
for dir in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
  [ -e "$dir/libcuda.so.1" ] && add_dir "$dir"
done
if command -v python3 >/dev/null; then
  site=$(python3 -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null)
  for s in $site; do
    for dir in "$s"/nvidia/*/lib; do
      [ -d "$dir" ] && add_dir "$dir"
    done
  done
fi
export LOOM_LIB_PATH=$lib_path

{
  echo "# preflight $(date -u +%FT%TZ), --device $device"
  nvidia-smi 2>&1 || echo "nvidia-smi: not found or failed"
  echo "## uname: $(uname -a)"
  echo "## C library here: $(ldd --version 2>&1 | head -n 1)"
  echo "## LOOM_LIB_PATH=$LOOM_LIB_PATH"
  echo "## LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  echo "## CUDA_LIB=${CUDA_LIB:-/usr/local/cuda/lib64}"
  for lib in libcuda.so.1 libcublasLt.so libcudnn.so libnccl.so; do
    echo "## $lib:"
    for dir in $(echo "$here/lib:$LOOM_LIB_PATH:${CUDA_LIB:-/usr/local/cuda/lib64}:${LD_LIBRARY_PATH:-}:/usr/lib/x86_64-linux-gnu:/usr/lib64" | tr ':' ' '); do
      ls "$dir"/$lib* 2>/dev/null
    done
  done
  echo "## nvcc: $(nvcc --version 2>/dev/null | tail -n 1)"
  echo "## compute-sanitizer: $(command -v compute-sanitizer || echo absent)"
  echo "## environment"
  env | sort
} > "$out/preflight.log" 2>&1

# One line per stage: name, verdict, figures, first failing check (tabs).
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
failed_suites=""
add_row() {
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(echo "$4" | tr '\t|' '  ')" >> "$rows"
  echo "$1: $2 ($3)"
}

# run_stage NAME LOG SECONDS BINARY ARGS...: one gtest binary under a
# timeout, appended to LOG; its verdict from the counts gtest prints.
run_stage() {
  local name=$1 log="$out/$2" seconds=$3 binary=$4
  shift 4
  local start end rc part passed skipped failed verdict first
  start=$(date +%s)
  part=$(mktemp)
  timeout --kill-after=10 "$seconds" "$here/run" "$binary" "$@" > "$part" 2>&1
  rc=$?
  end=$(date +%s)
  echo "## $binary $* (exit $rc)" >> "$log"
  cat "$part" >> "$log"
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$part" | tail -n 1)
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$part" | tail -n 1)
  failed=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$part" | tail -n 1)
  # The failure's location and the lines after it (the check, the values).
  first=$(grep -m 1 -A 3 -E 'Failure$' "$part" | tr '\n' ' ' | head -c 300)
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    verdict="TIMEOUT after ${seconds}s"
  elif [ $rc -ne 0 ]; then
    verdict="FAIL (exit $rc)"
    [ -z "$first" ] && first=$(tail -n 3 "$part" | tr '\n' ' ' | head -c 200)
  elif [ "$name" = nccl ] && [ "${passed:-0}" = 0 ] && [ "${skipped:-0}" != 0 ]; then
    # NCCL's own absence, or the CPU run's, is a skip with a reason.
    verdict="SKIPPED"
    first=$(grep -m 1 -A 1 'Skipped$' "$part" | tail -n 1 | head -c 200)
  elif [ "${passed:-0}" = 0 ]; then
    verdict="FAIL (no test ran)"
  elif [ "$device" = cuda ] && grep -q '^\[  SKIPPED \] .*/cuda' "$part"; then
    # The CPU's own cases may skip (a check that needs another device);
    # a skipped CUDA case is coverage lost.
    verdict="FAIL (CUDA cases skipped)"
    first=$(grep -m 1 '^\[  SKIPPED \] .*/cuda' "$part" | head -c 200)
  else
    verdict=PASS
  fi
  # What a suite counted besides its tests ("199 cases of 19 kernels on
  # ...", "42 kernels, 1327 steps replayed on ..."), per device.
  local counted
  counted=$(sed -n 's/^  \([0-9]* \(cases of [0-9]* kernels\|kernels, [0-9]* steps replayed\) on .*\)$/\1/p' "$part" |
    paste -sd ';' - | sed 's/;/; /g')
  rm -f "$part"
  case $verdict in PASS | SKIPPED) ;; *) failed_suites="$failed_suites $binary" ;; esac
  add_row "$name" "$verdict" \
    "${passed:-0} passed, ${skipped:-0} skipped, ${failed:-0} failed, $((end - start)) s${counted:+; $counted}" "$first"
}

if [ "$device" = cuda ]; then
  conformance_filter='*'
  golden_filter='*'
  agreement_filter='*'
else
  conformance_filter='*/cpu:DeviceKinds*'
  golden_filter='*/cpu'
  agreement_filter='*/tiny'
fi
stages=${GPU_CHECK_STAGES:-conformance golden agreement nccl sanitizer bench learn}
wanted() { case " $stages " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
wanted conformance &&
  run_stage conformance conformance.log 120 DeviceConformanceTest --gtest_filter="$conformance_filter"
wanted golden &&
  run_stage golden conformance.log 120 GoldenKernelsTest --gtest_filter="$golden_filter"
wanted agreement &&
  run_stage agreement agreement.log 240 DeviceAgreementTest --gtest_filter="$agreement_filter"
wanted nccl && run_stage nccl conformance.log 60 NcclCollectivesTest

for suite in $failed_suites; do
  case $suite in
    DeviceConformanceTest)
      LOOM_SYNC_EVERY_STEP=1 CUDA_LAUNCH_BLOCKING=1 run_stage "sync conformance" conformance.log 120 "$suite" \
        --gtest_filter="$conformance_filter"
      ;;
    GoldenKernelsTest)
      LOOM_SYNC_EVERY_STEP=1 CUDA_LAUNCH_BLOCKING=1 run_stage "sync golden" conformance.log 120 "$suite" \
        --gtest_filter="$golden_filter"
      ;;
    DeviceAgreementTest)
      LOOM_SYNC_EVERY_STEP=1 CUDA_LAUNCH_BLOCKING=1 run_stage "sync agreement" agreement.log 120 "$suite" \
        --gtest_filter='*/tiny:*/base'
      ;;
  esac
done

# memcheck on the library kernels and on the tiny model's generated ones.
# API errors are left out: the conformance suite asks for more memory than
# the GPU has on purpose, and checks the error it gets.
if ! wanted sanitizer; then
  :
elif [ "$device" = cpu ]; then
  add_row sanitizer "NOT RUN" "--device cpu" ""
elif ! command -v compute-sanitizer >/dev/null; then
  add_row sanitizer "NOT RUN" "no compute-sanitizer on this machine" ""
else
  start=$(date +%s)
  # The replay runs every kernel twice more; memcheck sees them in the
  # other tests.
  for suite in DeviceConformanceTest:'*cuda*' DeviceAgreementTest:'*/tiny:-*EveryKernelAgreesAlone*'; do
    echo "## compute-sanitizer ${suite%%:*} --gtest_filter=${suite#*:}" >> "$out/sanitizer.log"
    timeout --kill-after=10 120 compute-sanitizer --tool memcheck --report-api-errors no \
      --print-limit 20 --error-exitcode 99 "$here/run" "${suite%%:*}" \
      --gtest_filter="${suite#*:}" >> "$out/sanitizer.log" 2>&1
    echo "## exit $?" >> "$out/sanitizer.log"
  done
  findings=$(grep -h 'ERROR SUMMARY' "$out/sanitizer.log" | awk '{s += $4} END {print s + 0}')
  exits=$(grep -c '^## exit [^0]' "$out/sanitizer.log")
  verdict=PASS
  if [ "$findings" != 0 ] || [ "$exits" != 0 ]; then
    verdict=FAIL
    failed_suites="$failed_suites sanitizer"
  fi
  add_row sanitizer "$verdict" "$findings memcheck errors, $(($(date +%s) - start)) s" \
    "$(grep -m 1 -E 'Invalid|Race|Uninitialized' "$out/sanitizer.log" | head -c 200)"
fi

# Speed, Loom then PyTorch on the same model and shapes. The figures are
# reported, not judged; what fails here is a run that could not be timed.
bench_stage() {
  start=$(date +%s)
  if [ "$device" = cuda ]; then
    bench_exe=$here/data/base-bench-cuda.loomx
    sizes="--batch 32 --src-len 30 --tgt-len 30 --steps 10"
    torch_args="--preset base --batch 32 --src-len 30 --tgt-len 30 --steps 10 --warmup 2"
  else
    bench_exe=$here/data/tiny-cpu.loomx
    sizes="--batch 4 --src-len 8 --tgt-len 8 --steps 2"
    torch_args="--device cpu --preset tiny --batch 4 --src-len 8 --tgt-len 8 --steps 2 --warmup 1 --variants eager-fp32"
  fi
  bench_failed=""
  for mode in train decode "decode --beam 4"; do
    echo "## loom-bench $mode" >> "$out/bench.log"
    # shellcheck disable=SC2086 # the words of $mode and $sizes are arguments
    timeout --kill-after=10 120 "$here/run" loom-bench $mode --executable "$bench_exe" \
      $sizes --warmup 3 >> "$out/bench.log" 2>&1 || bench_failed="loom-bench $mode failed"
  done
  if command -v python3 >/dev/null; then
    echo "## pytorch_gpu_bench.py $torch_args" >> "$out/bench.log"
    # shellcheck disable=SC2086
    PYTHONUNBUFFERED=1 timeout --kill-after=10 "${GPU_CHECK_TORCH_SECONDS:-240}" python3 \
      "$here/bench/pytorch_gpu_bench.py" $torch_args >> "$out/bench.log" 2>&1 ||
      bench_failed="${bench_failed:-pytorch_gpu_bench.py failed}"
  else
    echo "## no python3: PyTorch not timed" >> "$out/bench.log"
  fi
  summary=$(python3 - "$out/bench.log" <<'PY' 2>/dev/null
import json, sys
rows = []
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        continue
    r = json.loads(line)
    who = r.get("system") or r.get("framework")
    what = r.get("mode", "") + (" beam %d" % r["beam"] if r.get("beam", 1) > 1 else "")
    variant = (" " + r["variant"]) if "variant" in r else ""
    if "error" in r:
        rows.append("%s %s%s: error" % (who, what, variant))
    else:
        rows.append("%s %s%s: %.0f tok/s, %.2f ms" % (
            who, what, variant, r["tokens_per_s"], r["step_ms_median"]))
print("; ".join(rows))
PY
  )
  if [ -n "$bench_failed" ]; then
    failed_suites="$failed_suites bench"
    add_row bench FAIL "$(($(date +%s) - start)) s; $summary" "$bench_failed"
  else
    add_row bench PASS "$(($(date +%s) - start)) s; $summary" ""
  fi
}
wanted bench && bench_stage

# Learning on the device: loom-train with the prepared multi30k recipe,
# against the same run's first 100 losses on a CPU.
learn_stage() {
  local learn=$here/learn start work code
  start=$(date +%s)
  if [ ! -d "$learn/prep" ]; then
    add_row learn "NOT RUN" "no learn/ in the bundle (make gpu-check M30K_DATA=DIR)" ""
    return
  fi
  if [ "$device" = cpu ] && grep -q '"device": "cuda"' "$learn/prep/prepare.json"; then
    # A CUDA executable does not run on the CPU; loom-train would refuse it.
    add_row learn "NOT RUN" "--device cpu; learn/ is prepared for cuda" ""
    return
  fi
  work=$(mktemp -d)
  local args=(--prepared "$learn/prep" --out "$work/run"
    --train "$learn/data/train.en" "$learn/data/train.de"
    --valid "$learn/data/val.en" "$learn/data/val.de" --seed 1
    --epochs 48 --time-limit "${GPU_CHECK_LEARN_SECONDS:-150}" --log-every 1
    --progress lines --no-plot)
  [ "$device" = cpu ] && args+=(--device cpu --threads 2)
  timeout --kill-after=10 $((${GPU_CHECK_LEARN_SECONDS:-150} + 120)) \
    "$here/run" loom-train "${args[@]}" > "$work/train.log" 2>&1
  code=$?
  # The log without the per-step lines after the first 100 (they are in
  # metrics.jsonl, summarized below).
  awk '!/^step / || ++n <= 100' "$work/train.log" > "$out/learn.log"
  local summary
  summary=$(python3 - "$work/run/metrics.jsonl" "$learn/cpu-losses.txt" <<'PY' 2>&1
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
train = {r["step"]: r for r in records if r["type"] == "train"}
valid = [r for r in records if r["type"] == "valid"]
cpu = {int(s): float(l) for s, l in (line.split() for line in open(sys.argv[2]))}
# The GPU's first 100 losses against the CPU's: the same batches, dropout
# masks and initial parameters, summed in other orders, which training
# carries forward. On an H200 they agreed to 1.5e-6 (relative) at worst; a
# wrong kernel changes the loss at the first step it runs, by far more
# than the 1e-4 the agreement suite allows one forward pass. The final
# greedy BLEU must show the model learned (the recipe reaches about 39 in
# 48 epochs; 20 is epoch 5's).
worst, at = 0.0, 0
rows = []
for step in sorted(cpu):
    if step not in train:
        continue
    rel = abs(train[step]["loss"] - cpu[step]) / abs(cpu[step])
    if rel > worst:
        worst, at = rel, step
    rows.append("%d %.6g %.6g %.2e" % (step, cpu[step], train[step]["loss"], rel))
compared = len(rows)
rates = [r["tokens_per_s"] for r in train.values() if r["tokens_per_s"]]
rate = sorted(rates)[len(rates) // 2] if rates else 0
last = valid[-1] if valid else None
print("\n".join(["step cpu_loss gpu_loss relative"] + rows), file=sys.stderr)
tolerance = 1e-4
ok = compared == len(cpu) and worst <= tolerance and last and last["valid_bleu"] >= 20
print("%s %d losses compared, worst %.2e at step %d (tolerance %.0e); "
      "%d steps, %d epochs; median %.0f tok/s; final val greedy BLEU %s, "
      "valid loss %s" % ("PASS" if ok else "FAIL", compared, worst, at, tolerance,
                         max(train) if train else 0, last["epoch"] if last else 0,
                         rate, last["valid_bleu"] if last else "none",
                         last["valid_nll"] if last else "none"))
PY
)
  echo "$summary" >> "$out/learn.log"
  local line verdict
  line=$(echo "$summary" | tail -n 1)
  verdict=${line%% *}
  if [ $code -ne 0 ] || [ "$verdict" != PASS ]; then
    failed_suites="$failed_suites learn"
    add_row learn "FAIL (exit $code)" "$(($(date +%s) - start)) s; ${line#* }" \
      "$(grep -m 1 'error' "$out/learn.log" | head -c 200)"
  else
    add_row learn PASS "$(($(date +%s) - start)) s; ${line#* }" ""
  fi
  rm -rf "$work"
}
wanted learn && learn_stage

gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
[ "$device" = cpu ] && gpu="CPU dry run (--device cpu)"
{
  echo "# GPU check, $(date -u +%F), ${gpu:-no GPU seen}"
  echo
  echo "| stage | verdict | figures | first failing check |"
  echo "| --- | --- | --- | --- |"
  awk -F '\t' '{printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4}' "$rows"
} > "$out/gpu-report.md"
if command -v python3 >/dev/null; then
  python3 - "$rows" "$out/gpu-report.json" "${gpu:-}" "$device" "${failed_suites:-none}" <<'PY'
import json, sys
stages = []
for line in open(sys.argv[1]):
    name, verdict, figures, first = (line.rstrip("\n").split("\t") + [""] * 4)[:4]
    stages.append({"stage": name, "verdict": verdict, "figures": figures,
                   "first_failure": first})
json.dump({"gpu": sys.argv[3], "device": sys.argv[4], "stages": stages,
           "passed": sys.argv[5] == "none"},
          open(sys.argv[2], "w"), indent=1)
PY
fi
cat "$out/gpu-report.md"
[ -z "$failed_suites" ]
