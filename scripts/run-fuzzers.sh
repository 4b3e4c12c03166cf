#!/usr/bin/env bash
# Runs Loom's fuzz targets (fuzz/, built with -DLOOM_FUZZ=ON) one after the
# other, each for SECONDS on its own copy of its seed corpus:
#
#   scripts/run-fuzzers.sh BUILD SECONDS TARGET...
#
# The copy lives in BUILD/fuzz-run/TARGET/corpus and keeps what earlier runs
# added to it; the committed seeds are never written. Inputs in
# fuzz/regressions/TARGET are run once before. Anything a target
# finds (crash, leak, timeout, out-of-memory) lands in
# BUILD/fuzz-run/TARGET/artifacts and fails the run. Prints the executions
# of every target at the end. FUZZ_FLAGS adds libFuzzer flags (-jobs=2, ...).
#
# The target `plot` is not a libFuzzer binary but fuzz/plot_fuzz.py (the
# metrics reader of tools/loom/loom-plot.py, in Python): it runs
# PLOT_FUZZ_RUNS inputs (default 10^6, about a minute), not SECONDS, from
# the seeds in fuzz/corpus/plot, with the same artifacts folder.
set -uo pipefail

if [ $# -lt 3 ]; then
  echo "usage: $0 BUILD SECONDS TARGET..." >&2
  exit 2
fi
build=$(cd "$1" && pwd)
seconds=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)

# Reports with symbolized stacks; one report is a failure, as in the tests.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

status=0
summary=()
# The Python harness of the plot target: a fixed number of executions from
# a fixed seed, so that a finding can be replayed.
run_plot() {
  local work=$build/fuzz-run/plot
  rm -rf "$work/artifacts.previous"
  [ -d "$work/artifacts" ] && mv "$work/artifacts" "$work/artifacts.previous"
  mkdir -p "$work/artifacts"
  echo "run-fuzzers: plot for ${PLOT_FUZZ_RUNS:-1000000} executions (log: $work/log.txt)"
  "${PYTHON:-python3}" "$root/fuzz/plot_fuzz.py" --runs "${PLOT_FUZZ_RUNS:-1000000}" \
    --seed "${PLOT_FUZZ_SEED:-1}" --corpus "$root/fuzz/corpus/plot" \
    --crash-dir "$work/artifacts" >"$work/log.txt" 2>&1
  local rc=$?
  local runs
  runs=$(grep -ho 'stat::number_of_executed_units: *[0-9]*' "$work/log.txt" |
           awk '{n += $2} END {print n + 0}')
  if [ $rc -ne 0 ] || [ -n "$(ls -A "$work/artifacts")" ]; then
    echo "run-fuzzers: plot FAILED (exit $rc); artifacts in $work/artifacts:" >&2
    ls "$work/artifacts" >&2
    tail -n 60 "$work/log.txt" >&2
    summary+=("$(printf '%-12s %12s executions  FAILED' plot "$runs")")
    status=1
  else
    summary+=("$(printf '%-12s %12s executions  ok' plot "$runs")")
  fi
}

for target in "$@"; do
  if [ "$target" = plot ]; then
    run_plot
    continue
  fi
  binary=$build/bin/fuzz-$target
  seeds=$root/fuzz/corpus/$target
  work=$build/fuzz-run/$target
  if [ ! -x "$binary" ] || [ ! -d "$seeds" ]; then
    echo "run-fuzzers: no $binary or no seeds in $seeds" >&2
    status=1
    continue
  fi
  # Findings of an earlier run are kept aside, not counted again.
  rm -rf "$work/artifacts.previous" "$work"/fuzz-*.log
  [ -d "$work/artifacts" ] && mv "$work/artifacts" "$work/artifacts.previous"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp -n "$seeds"/* "$work/corpus/"
  flags=(-max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096
         -print_final_stats=1 -artifact_prefix="$work/artifacts/")
  if [ -f "$root/fuzz/dict/$target.dict" ]; then
    flags+=(-dict="$root/fuzz/dict/$target.dict")
  fi
  # Inputs that once broke the code but are longer than the fuzzer's inputs
  # (fuzz/regressions/TARGET) are replayed first, each once.
  regressions=("$root/fuzz/regressions/$target"/*)
  if [ -e "${regressions[0]}" ]; then
    if ! (cd "$work" && "$binary" "${regressions[@]}") >"$work/regressions.txt" 2>&1; then
      echo "run-fuzzers: $target FAILED on a regression input:" >&2
      tail -n 60 "$work/regressions.txt" >&2
      summary+=("$(printf '%-12s %12s executions  FAILED (regression)' "$target" 0)")
      status=1
      continue
    fi
  fi
  echo "run-fuzzers: $target for ${seconds}s (log: $work/log.txt)"
  # shellcheck disable=SC2086 # FUZZ_FLAGS is a list of flags
  (cd "$work" && "$binary" "${flags[@]}" ${FUZZ_FLAGS:-} corpus) \
    >"$work/log.txt" 2>&1
  rc=$?
  runs=$(grep -ho 'stat::number_of_executed_units: *[0-9]*' "$work"/log.txt \
           "$work"/fuzz-*.log 2>/dev/null | awk '{n += $2} END {print n + 0}')
  if [ $rc -ne 0 ] || [ -n "$(ls -A "$work/artifacts")" ]; then
    echo "run-fuzzers: $target FAILED (exit $rc); artifacts in $work/artifacts:" >&2
    ls "$work/artifacts" >&2
    tail -n 60 "$work/log.txt" >&2
    summary+=("$(printf '%-12s %12s executions  FAILED' "$target" "$runs")")
    status=1
  else
    summary+=("$(printf '%-12s %12s executions  ok' "$target" "$runs")")
  fi
done

echo
echo "run-fuzzers: ${seconds}s per target"
printf '  %s\n' "${summary[@]}"
exit $status
