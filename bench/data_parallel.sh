#!/usr/bin/env bash
# Data-parallel training on this machine's CPU cores, side by side:
# one process with T threads against T MPI ranks of one thread each, on the
# Multi30k `small` recipe (docs/PERFORMANCE.md), for STEPS steps.
#
#   bench/data_parallel.sh DATA [STEPS] [T]
#
# DATA holds train.en and train.de. Prints each run's last reports: tokens/s
# over the window and, for the ranks, the share of the time rank 0 waited
# for the all-reduces; once with 25 MiB buckets (sent during the backward
# pass) and once with all gradients in one all-reduce after it.
set -euo pipefail
data=${1:?usage: bench/data_parallel.sh DATA [STEPS] [T]}
steps=${2:-60}
threads=${3:-2}
loom=${LOOM:-build/bin/loom}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
common=(train --preset small --train "$data/train.en" "$data/train.de"
        --max-tokens 4096 --steps "$steps" --warmup 800 --lr-scale 0.5
        --log-every 20 --seed 1 --progress lines)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo "== 1 process x $threads threads"
"$loom" "${common[@]}" --out "$out/threads" --threads "$threads" | grep '^step' | tail -2
echo "== $threads processes x 1 thread (mpirun)"
mpirun --oversubscribe -np "$threads" "$loom" "${common[@]}" --out "$out/ranks" --threads 1 |
  grep -E '^(model|step)' | tail -3
echo "== $threads processes x 1 thread, all gradients in one all-reduce after the backward pass"
mpirun --oversubscribe -np "$threads" "$loom" "${common[@]}" --out "$out/one-bucket" --threads 1 \
  --bucket-mb 1024 | grep -E '^step' | tail -2
echo "== 1 process x 1 thread (one rank's compute, no communication, the whole batch)"
"$loom" "${common[@]}" --out "$out/one" --threads 1 | grep '^step' | tail -2
