#!/usr/bin/env bash
# Installs Loom into a fresh prefix and uses it as a user would:
#  1. examples/custom_model, a separate CMake project, finds the installed
#     Loom (Loom::compiler), defines its own model, compiles it to an
#     executable file and trains it for a few steps with the runtime;
#  2. the installed `loom` trains a tiny translator (drawing its learning
#     curves with the installed loom-plot) and exports it, and
#     examples/c_api, a C program on libloom.so, translates with the folder
#     exactly as the folder's loom-translate does;
#  3. neither libloom.so nor loom-translate carries LLVM or MLIR.
# Usage: install_and_use.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$1
src=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
log=$work/log.txt
step() { echo "install test: $*"; }

step "cmake --install into $prefix"
cmake --install "$build" --prefix "$prefix" > "$log"
test -f "$prefix/lib/cmake/Loom/LoomConfig.cmake"
test -f "$prefix/include/loom/loom.h"

step "examples/custom_model against the installed Loom::compiler"
cmake -S "$src/examples/custom_model" -B "$work/custom" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" >> "$log"
cmake --build "$work/custom" >> "$log"
(cd "$work" && "$work/custom/custom_model" --steps 300 --out "$work/custom.loomx")
test -s "$work/custom.loomx"
"$prefix/bin/loom" inspect "$work/custom.loomx" > "$work/custom.txt"
grep -q 'name: "train_step"' "$work/custom.txt"

step "a tiny translator, trained and exported with the installed loom"
python3 "$src/tests/e2e/Inputs/make_corpus.py" "$work/train" 400 1
python3 "$src/tests/e2e/Inputs/make_corpus.py" "$work/valid" 40 2
"$prefix/bin/loom" train --preset tiny --train "$work/train.src" "$work/train.tgt" \
  --valid "$work/valid.src" "$work/valid.tgt" --valid-every 15 \
  --out "$work/run" --max-tokens 256 --warmup 4 --steps 30 --log-every 10 --threads 1 >> "$log"
# The installed loom found the installed loom-plot: the curves are there.
test -s "$work/run/curves.png"
"$prefix/bin/loom" export --model "$work/run" -o "$work/folder" >> "$log"

step "examples/c_api against the installed libloom.so"
cmake -S "$src/examples/c_api" -B "$work/c" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" >> "$log"
cmake --build "$work/c" >> "$log"
"$work/c/translate" "$work/folder" 3 2 < "$work/valid.src" > "$work/c.txt" 2> "$work/c.err"
"$work/folder/loom-translate" --beam 3 --nbest 2 --threads 1 < "$work/valid.src" > "$work/cli.txt"
diff "$work/c.txt" "$work/cli.txt"
test "$(wc -l < "$work/c.txt")" -eq 80
grep -q "refused as expected (invalid argument): " "$work/c.err"

step "no compiler in the runtime's binaries"
"$src/scripts/check-no-compiler.sh" "$prefix/lib/libloom.so" "$prefix/bin/loom-translate"
nm -D --defined-only "$prefix/lib/libloom.so" | awk '{print $3}' | grep -v '^loom_' && {
  echo "install test: libloom.so exports more than the C API" >&2
  exit 1
}
echo "install test: 4 passed, 0 failed"
