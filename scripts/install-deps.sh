#!/usr/bin/env bash
# Installs, from Debian's packages, whatever Loom needs that is missing. Idempotent and quiet when
# everything is present: it asks dpkg first and runs apt-get only for what is absent.
#
#   install-deps.sh        what every build and `make test` need
#   install-deps.sh fuzz   that, plus clang, libFuzzer and clang's OpenMP for
#                          `make fuzz`
set -euo pipefail

packages=(
  cmake ninja-build ccache g++ pkg-config
  llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools
  libprotobuf-dev protobuf-compiler
  libopenmpi-dev openmpi-bin
  libgtest-dev libgmock-dev libbenchmark-dev
  libsentencepiece-dev libopenblas-dev libdnnl-dev
  nlohmann-json3-dev libcli11-dev
  libboost-dev prometheus-cpp-dev
  zlib1g-dev libzstd-dev libedit-dev libxml2-dev libcurl4-openssl-dev
  python3 python3-torch python3-numpy python3-sentencepiece
  libonnx-dev python3-onnx libonnx-testdata
  python3-matplotlib
  # The Python module (python/) and its tests.
  python3-dev pybind11-dev python3-pybind11 python3-pytest python3-setuptools python3-wheel python3-pip python3-venv
  # The server's load benchmark (bench/serve_load.py) and its page's test
  # in a headless browser (tests/serve).
  wrk chromium chromium-driver python3-selenium
)

case "${1:-}" in
  "") ;;
  fuzz) packages+=(clang-19 libclang-rt-19-dev libomp-19-dev) ;;
  *)
    echo "install-deps: unknown group '$1' (the only one is 'fuzz')" >&2
    exit 2
    ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
