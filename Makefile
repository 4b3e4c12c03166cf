# Loom's entry points. Each target installs what is missing, configures once and builds incrementally.
BUILD ?= build
JOBS ?= $(shell nproc)
export CCACHE_DIR ?= $(HOME)/.cache/loom-ccache

.PHONY: all deps configure build test demo format clean

all: build

deps:
	@./scripts/install-deps.sh

$(BUILD)/build.ninja: CMakeLists.txt | deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

configure: deps $(BUILD)/build.ninja

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

demo: build
	@$(BUILD)/bin/loom demo

format:
	@git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
