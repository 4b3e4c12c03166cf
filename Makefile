# Loom's entry points. Each target installs what is missing, configures once and builds incrementally.
BUILD ?= build
JOBS ?= $(shell nproc)
export CCACHE_DIR ?= $(HOME)/.cache/loom-ccache

.PHONY: all deps configure build test demo format clean deps-fuzz fuzz test-sanitize device-bundle gpu-check

# Instrumented builds beside the normal one (docs/FUZZING.md).
FUZZ_BUILD ?= build-fuzz
SANITIZE_BUILD ?= build-sanitize
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= config safetensors executable mlir text onnx plot
# plot is fuzz/plot_fuzz.py (Python, nothing to build); the others are
# libFuzzer binaries of the fuzz build.
FUZZ_BINARIES = $(filter-out plot,$(FUZZ_TARGETS))
# A report names the line; a UB report or a leak fails the test.
SANITIZER_ENV = ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:check_initialization_order=1 \
                UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

all: build

deps:
	@./scripts/install-deps.sh

$(BUILD)/build.ninja: CMakeLists.txt | deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

configure: deps $(BUILD)/build.ninja

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# On a failure, what failed is printed last (scripts/summarize-test-failures.py).
test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) || \
	  { python3 $(CURDIR)/scripts/summarize-test-failures.py .; exit 1; }

# The runtime-only binaries and their libraries, for a GPU machine without
# Debian's packages (scripts/device-bundle.sh says how to run them there).
# GoldenKernelsTest replays the kernel suites' cases (golden/, written here
# by their CPU runs with the interpreter's results); DeviceAgreementTest
# runs `tiny` (the build compiles it), `multi30k` and
# `base`; loom-bench times base-bench-cuda (batch 32, beam 4); with
# Multi30k in M30K_DATA, the learn stage trains the multi30k recipe there.
DEVICE_DATA = $(BUILD)/device-data
M30K_DATA ?=
device-bundle: build
	@mkdir -p $(DEVICE_DATA)
	@cp $(BUILD)/tests/unit/device-data/*.loomx $(DEVICE_DATA)/
	@for preset in multi30k base; do \
	  $(BUILD)/bin/loom compile --preset $$preset --target cpu --cpu x86-64-v3 \
	    --max-tokens 256 --max-len 32 --max-batch 16 -o $(DEVICE_DATA)/$$preset-cpu.loomx && \
	  $(BUILD)/bin/loom compile --preset $$preset --target cpu --cpu x86-64-v3 --cuda-layouts \
	    --max-tokens 256 --max-len 32 --max-batch 16 -o $(DEVICE_DATA)/$$preset-cpu-cuda-layouts.loomx && \
	  $(BUILD)/bin/loom compile --preset $$preset --target cuda \
	    --max-tokens 256 --max-len 32 --max-batch 16 -o $(DEVICE_DATA)/$$preset-cuda.loomx || exit 1; \
	done
	@$(BUILD)/bin/loom compile --preset base --target cuda \
	  --max-tokens 4096 --max-len 32 --max-batch 128 -o $(DEVICE_DATA)/base-bench-cuda.loomx
	@if [ -n "$(M30K_DATA)" ]; then \
	  ./scripts/prepare-gpu-learn.sh $(BUILD) $(BUILD)/learn $(M30K_DATA); \
	else \
	  echo "device-bundle: no M30K_DATA=DIR (Multi30k); the learn stage will not run"; \
	  rm -rf $(BUILD)/learn; \
	fi
	@LOOM_GOLDEN_DIR=$(BUILD)/golden ./tests/unit/write-golden.sh \
	  $(BUILD)/bin/LibraryKernelsTest $(BUILD)/bin/AttentionKernelsTest
	@DEVICE_BUNDLE_DATA="$$(ls $(DEVICE_DATA)/*.loomx)" \
	  DEVICE_BUNDLE_MODULES="$(BUILD)/lib/libloom_sentencepiece.so" \
	  DEVICE_BUNDLE_DIRS="$(BUILD)/golden $$(ls -d $(BUILD)/learn 2>/dev/null)" \
	  ./scripts/device-bundle.sh $(BUILD) device-bundle.tar.xz \
	  DeviceConformanceTest GoldenKernelsTest DeviceAgreementTest NcclCollectivesTest \
	  loom-translate loom-bench loom-train

# The GPU check (docs/GPU.md): the bundle, and the one command to run where
# the GPU is.
gpu-check: device-bundle
	@echo "gpu-check: on the GPU machine, beside device-bundle.tar.xz ($$(du -h device-bundle.tar.xz | cut -f1)):"
	@echo "  mkdir -p B && tar -xJf device-bundle.tar.xz -C B && B/gpu-check OUTDIR"

demo: build
	@$(BUILD)/bin/loom demo

format:
	@git ls-files '*.cpp' '*.h' | xargs clang-format -i

deps-fuzz:
	@./scripts/install-deps.sh fuzz

$(FUZZ_BUILD)/build.ninja: CMakeLists.txt | deps-fuzz
	@cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOOM_FUZZ=ON \
	  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19

# Every target for FUZZ_SECONDS on a copy of its seed corpus in the build
# folder (plot: PLOT_FUZZ_RUNS inputs, 10^6 by default); fails on any crash,
# leak, timeout or out-of-memory.
fuzz: $(if $(FUZZ_BINARIES),$(FUZZ_BUILD)/build.ninja)
	@mkdir -p $(FUZZ_BUILD)
	@$(if $(FUZZ_BINARIES),cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(addprefix fuzz-,$(FUZZ_BINARIES)))
	@./scripts/run-fuzzers.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

$(SANITIZE_BUILD)/build.ninja: CMakeLists.txt | deps
	@cmake -S . -B $(SANITIZE_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOOM_SANITIZE=ON

# The unit, lit and e2e tests under ASan and UBSan (tests/CMakeLists.txt
# says which tests a sanitizer build leaves out, and why).
test-sanitize: $(SANITIZE_BUILD)/build.ninja
	@cmake --build $(SANITIZE_BUILD) -j $(JOBS)
	@cd $(SANITIZE_BUILD) && $(SANITIZER_ENV) ctest --output-on-failure -j $(JOBS) || \
	  { python3 $(CURDIR)/scripts/summarize-test-failures.py .; exit 1; }

clean:
	rm -rf $(BUILD)
