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

# The main job: the hpipe tool on the synthetic 28-band scene: write it, measure it through the
# coded mask into a 16-bit PNG (A), invert that back to a band stack (A+), measure the result
# again and compare: the round trip A(A+ y) against y. Then reconstruct y with GAP-TV and compare
# it and the pseudo-inverse with the scene (PSNR/SSIM), ending with one colour picture of the
# three side by side. Each step prints its times. Files in $(DEMO).
DEMO  ?= $(BUILD)/demo
HPIPE  = $(BUILD)/tools/hpipe
demo: build
	@rm -rf $(DEMO) && mkdir -p $(DEMO)
	$(HPIPE) synth -o $(DEMO)/scene/band_%02d.png --mask $(DEMO)/mask.png
	$(HPIPE) cassi forward $(DEMO)/scene --mask $(DEMO)/mask.png --step 2 -o $(DEMO)/measurement.png --scale auto
	$(HPIPE) cassi pinv $(DEMO)/measurement.png --mask $(DEMO)/mask.png --step 2 -o $(DEMO)/pinv/band_%02d.png --scale auto
	$(HPIPE) cassi forward $(DEMO)/pinv --mask $(DEMO)/mask.png --step 2 -o $(DEMO)/measurement_again.npy
	@echo "round trip: A(A+ y) against y (y and A+ y stored as 16-bit PNGs):"
	$(HPIPE) diff $(DEMO)/measurement.png $(DEMO)/measurement_again.npy
	@echo "GAP-TV reconstruction of y (20 iterations): PSNR/SSIM against the scene, beside the pseudo-inverse's:"
	$(HPIPE) recon gap-tv $(DEMO)/measurement.png --mask $(DEMO)/mask.png --step 2 --iters 20 --truth $(DEMO)/scene -o $(DEMO)/gap_tv/band_%02d.png --scale auto --preview $(DEMO)/preview
	@echo "in colour (CIE 1931, the 28 KAIST wavelengths): scene | pseudo-inverse | GAP-TV: $(DEMO)/preview/comparison.png"

clean:
	rm -rf $(BUILD)
