#!/usr/bin/env bash
# Packs runtime-only binaries (no LLVM, no MLIR) with every shared library
# they load, the C library and its loader included, into one archive, so
# that they run on a machine with none of Debian's packages: the GPU
# machine, which has the NVIDIA driver and the CUDA toolkit but not oneDNN,
# OpenBLAS or protobuf, and may have an older C library. There:
#
#   mkdir B && tar -xJf device-bundle.tar.xz -C B && B/run DeviceConformanceTest
#
# `run` starts a binary through the packed loader with the packed libraries
# first, then the folders in LOOM_LIB_PATH (gpu-check finds those holding
# NCCL or cuDNN inside PyTorch's packages), then CUDA's (CUDA_LIB, default
# /usr/local/cuda/lib64), then the caller's LD_LIBRARY_PATH, which the
# loader's --library-path would otherwise replace: the GPU driver (libcuda)
# is the machine's own, never packed, and often found only through it. The
# C library's companions that CUDA's libraries and the driver load by name
# (libdl, librt, libpthread, libm) are packed beside the C library, so that
# none of the machine's, built for another C library, is mixed in. Files named in
# DEVICE_BUNDLE_DATA (compiled executables, say) go into data/, which `run`
# names in LOOM_DEVICE_DATA; a folder golden/ among DEVICE_BUNDLE_DIRS (the
# kernel suites' cases) it names in LOOM_GOLDEN_DIR.
#
# Shared objects in DEVICE_BUNDLE_MODULES (ones a binary opens at run time,
# as the tokenizer's SentencePiece module) go into lib/ with what they
# load; folders in DEVICE_BUNDLE_DIRS are copied as they are (the learn
# stage's prepared run).
#
# Usage: scripts/device-bundle.sh BUILD_DIR OUT_ARCHIVE BINARY...
# (DEVICE_BUNDLE_XZ_LEVEL: xz level, default 6)
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 BUILD_DIR OUT_ARCHIVE BINARY..." >&2
  exit 2
fi
build=$1
out=$2
shift 2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
# pack_libraries FILE: every library the loader resolves for FILE, and the
# loader itself, into lib/; the driver and the vDSO stay behind.
pack_libraries() {
  ldd "$1" | awk '/=>/ && $3 ~ /^\// {print $3} /^\t\/.*ld-linux/ {print $1}' |
    grep -v -E 'libcuda\.so' | while read -r lib; do
      cp -L -n "$lib" "$stage/lib/"
    done
}
for name in "$@"; do
  binary="$build/bin/$name"
  if [ ! -x "$binary" ]; then
    echo "device-bundle: no binary $binary" >&2
    exit 1
  fi
  if ldd "$binary" | grep -q -E 'libMLIR|libLLVM'; then
    echo "device-bundle: $name links LLVM or MLIR; only runtime-only binaries travel" >&2
    exit 1
  fi
  cp "$binary" "$stage/bin/"
  pack_libraries "$binary"
done
for module in ${DEVICE_BUNDLE_MODULES:-}; do
  cp -L "$module" "$stage/lib/"
  pack_libraries "$module"
done
for dir in ${DEVICE_BUNDLE_DIRS:-}; do
  cp -r "$dir" "$stage/"
done
# The C library's companions, from the folder the packed C library came
# from (the binaries above need not load them themselves).
libc_dir=$(dirname "$(ldd "$build/bin/$1" | awk '$1 == "libc.so.6" {print $3}')")
for stub in libdl.so.2 librt.so.1 libpthread.so.0 libm.so.6; do
  if [ -e "$libc_dir/$stub" ]; then
    cp -L -n "$libc_dir/$stub" "$stage/lib/"
  fi
done
mkdir -p "$stage/data"
for file in ${DEVICE_BUNDLE_DATA:-}; do
  cp "$file" "$stage/data/"
done
loader=$(cd "$stage/lib" && ls ld-linux-*.so.* | head -n 1)
cat > "$stage/run" <<RUN
#!/bin/sh
# Runs bin/\$1 with the libraries packed beside it (scripts/device-bundle.sh).
here=\$(cd "\$(dirname "\$0")" && pwd)
name=\$1
shift
export LOOM_DEVICE_DATA=\${LOOM_DEVICE_DATA:-\$here/data}
export LOOM_GOLDEN_DIR=\${LOOM_GOLDEN_DIR:-\$here/golden}
path=\$here/lib
for dir in \${LOOM_LIB_PATH:-} \${CUDA_LIB:-/usr/local/cuda/lib64} \${LD_LIBRARY_PATH:-}; do
  path=\$path:\$dir
done
exec "\$here/lib/$loader" --library-path "\$path" "\$here/bin/\$name" "\$@"
RUN
chmod +x "$stage/run"
cp "$(dirname "$0")/gpu-check.sh" "$stage/gpu-check"
# The GPU peer of loom-bench, which gpu-check runs with the machine's own
# python3 and PyTorch.
mkdir -p "$stage/bench"
cp "$(dirname "$0")/../bench/pytorch_bench.py" "$(dirname "$0")/../bench/pytorch_gpu_bench.py" \
  "$stage/bench/"
strip --strip-unneeded "$stage"/bin/* 2>/dev/null || true
tar -C "$stage" -cf - . | xz -T0 "-${DEVICE_BUNDLE_XZ_LEVEL:-6}" > "$out"
echo "device-bundle: $out, $(du -h "$out" | cut -f1) ($(ls "$stage/bin" | tr '\n' ' '))"
