#!/usr/bin/env bash
# The device bundle (scripts/device-bundle.sh) packs the runtime-only suites,
# loom-bench and loom-translate with their libraries and the GPU check; here
# the check's CPU dry run (gpu-check --device cpu) runs from the unpacked
# folder through the packed loader with no environment, and every stage of
# its report must pass: the script, the archive and the report are exercised
# on every change, not only on the rare machine with a GPU.
set -euo pipefail
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data=$(ls "$build"/tests/unit/device-data/*.loomx 2>/dev/null || true)
if [ -z "$data" ]; then
  # A build without CUDA code generation compiles no device data.
  "$build/bin/loom" compile --preset tiny --target cpu --cpu x86-64-v3 \
    --max-tokens 256 --max-len 32 --max-batch 16 -o "$work/tiny-cpu.loomx"
  cp "$work/tiny-cpu.loomx" "$work/tiny-cuda.loomx"
  data="$work/tiny-cpu.loomx $work/tiny-cuda.loomx"
fi
# A few of the kernel suites' cases: the golden stage's replay, not its
# coverage, is what the dry run exercises.
mkdir -p "$work/golden"
LOOM_GOLDEN_DIR="$work/golden" "$build/bin/LibraryKernelsTest" \
  --gtest_filter='DeviceKernels/GatherKernel.*/cpu:DeviceKernels/CrossEntropyGradKernel.*/cpu' \
  --gtest_brief=1 > /dev/null
DEVICE_BUNDLE_XZ_LEVEL=0 DEVICE_BUNDLE_DATA="$data" DEVICE_BUNDLE_DIRS="$work/golden" \
  "$(dirname "$0")/../scripts/device-bundle.sh" "$build" "$work/b.tar.xz" \
  DeviceConformanceTest GoldenKernelsTest DeviceAgreementTest NcclCollectivesTest loom-translate \
  loom-bench
mkdir "$work/b"
tar -xJf "$work/b.tar.xz" -C "$work/b"
env -i PATH=/usr/bin:/bin "$work/b/run" loom-translate --help > /dev/null
status=0
env -i PATH=/usr/bin:/bin "$work/b/gpu-check" --device cpu "$work/out" || status=$?
report=$work/out/gpu-report.md
# Every stage is in the report, each passed (NCCL skips without a GPU and
# the sanitizer does not run on the CPU), and the figures are there.
for stage in conformance golden agreement nccl sanitizer bench; do
  grep -q "^| $stage | " "$report" || { echo "no $stage row in the report" >&2; exit 1; }
done
if grep -E '^\| [a-z ]+ \| (FAIL|TIMEOUT)' "$report"; then
  echo "a stage of the dry run failed; its log:" >&2
  tail -n 40 "$work/out"/*.log >&2
  exit 1
fi
grep -q '^| bench | PASS | .*loom train: [0-9]* tok/s.*pytorch train eager-fp32: [0-9]* tok/s' "$report"
python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(0 if r["passed"] else 1)' \
  "$work/out/gpu-report.json"
[ "$(ls "$work/out" | wc -l)" -le 8 ]
exit $status
