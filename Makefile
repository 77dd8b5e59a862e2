# hpipe: the commands README promises. Each installs missing Debian packages first (as root),
# configures a Release build in $(BUILD) and builds what it needs.
BUILD    ?= build
PREFIX   ?= $(CURDIR)/$(BUILD)/install
JOBS     ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all deps configure build test bench install demo clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja:
	@$(MAKE) --no-print-directory deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)

configure: $(BUILD)/build.ninja

build: deps configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# Benchmarks: ratios to BM_stream_copy (same run) are printed at the end; JSON in $(BUILD)/bench.json.
bench: build
	$(BUILD)/bench/hpipe_bench --benchmark_out=$(BUILD)/bench.json --benchmark_out_format=json $(BENCH_ARGS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# The main job: the CASSI demo, built as a downstream app against the installed package.
demo: install
	cmake -S examples/cassi_demo -B $(BUILD)/demo -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=$(PREFIX)
	cmake --build $(BUILD)/demo
	$(BUILD)/demo/cassi_demo

clean:
	rm -rf $(BUILD)
