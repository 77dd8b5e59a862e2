# hpipe: the commands README promises. Each installs missing Debian packages first (as root),
# configures a Release build in $(BUILD) and builds what it needs.
BUILD    ?= build
PREFIX   ?= $(CURDIR)/$(BUILD)/install
JOBS     ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all deps configure build test test-sanitize fuzz bench install demo clean format

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja:
	@$(MAKE) --no-print-directory deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)

configure: $(BUILD)/build.ninja

# CMAKE_ARGS given to a tree configured before apply too (they were read only by the first configure).
build: deps configure
ifneq ($(strip $(CMAKE_ARGS)),)
	cmake -S . -B $(BUILD) $(CMAKE_ARGS)
endif
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The suite under AddressSanitizer (leaks included) and UndefinedBehaviorSanitizer, in its own build
# folder; any report fails the test that caused it. CUDA is built, so that the CUDA host path runs
# under them against the stand-in driver (hpipe_fake_cuda_tests). The Halide kernels are generated
# code and not instrumented, so one CPU variant is built (AVX2, as every CI runner has), and the
# suite's runs on other variants are left out, as are the two builds that link the instrumented
# static libraries into an uninstrumented project (downstream_build, tune_bundle), and the Python
# module (an instrumented extension cannot load into an uninstrumented interpreter). The generators
# run at build time under detect_leaks=0: they are Halide's compiler, whose allocations at exit are
# not hpipe's (they are instrumented all the same: UB in a generator fails the build).
SANITIZE_BUILD ?= build-sanitize
SANITIZE_FLAGS  = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g1
test-sanitize: deps
	cmake -S . -B $(SANITIZE_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DHPIPE_CUDA=ON -DHPIPE_BUILD_BENCH=OFF -DHPIPE_PYTHON=OFF \
	  -DHPIPE_CPU_TARGETS=x86-64-linux-avx-avx2-f16c-fma-sse41-user_context \
	  "-DCMAKE_CXX_FLAGS=$(SANITIZE_FLAGS)" "-DCMAKE_C_FLAGS=$(SANITIZE_FLAGS)" \
	  "-DCMAKE_EXE_LINKER_FLAGS=$(SANITIZE_FLAGS)" $(CMAKE_ARGS)
	ASAN_OPTIONS=detect_leaks=0 cmake --build $(SANITIZE_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(SANITIZE_BUILD) --output-on-failure -j $(JOBS) -E '_on_(avx2|sse41)$$|^downstream_build|^tune_bundle$$'

# libFuzzer on each file reader (tests/fuzz/fuzz_*.cpp) for FUZZ_SECONDS each, starting from its
# corpus in tests/fuzz/corpus/; needs clang (Debian: apt-get install clang). New inputs that grow
# coverage land in $(FUZZ_BUILD)/corpus/, crashes in $(FUZZ_BUILD)/ (add the input of a fixed crash
# to tests/fuzz/corpus/ so that ctest replays it). A request past the machine's memory returns null,
# as malloc does outside ASan (libhdf5 asks for 2 TB on some corrupt files, and then reports the
# file corrupt); requests of more than 2 GB that succeed are still findings.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_READERS  = $(patsubst tests/fuzz/fuzz_%.cpp,%,$(wildcard tests/fuzz/fuzz_*.cpp))
fuzz:
	@command -v clang++ >/dev/null || { echo "make fuzz needs clang's libFuzzer: sudo apt-get install -y clang" >&2; exit 1; }
	cmake -S tests/fuzz -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	for r in $(FUZZ_READERS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$r && \
	  ASAN_OPTIONS=allocator_may_return_null=1 $(FUZZ_BUILD)/fuzz_$$r -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -artifact_prefix=$(FUZZ_BUILD)/$$r- \
	    $(FUZZ_BUILD)/corpus/$$r tests/fuzz/corpus/$$r || exit 1; \
	done

# Benchmarks: ratios to the memory references (BM_stream_*, same run) are printed at the end; JSON
# in $(BUILD)/bench.json. The repetitions run in random order across all benchmarks, so that a
# kernel's median and its reference's sample the same minutes of a machine whose memory bandwidth
# drifts (shared virtual machines: +-20% within an hour).
BENCH_ARGS ?= --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
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

# The C++ style (.clang-format), on every C++ file but the generated polynomial tables.
format:
	git ls-files '*.cpp' '*.h' ':!generators/math_coefficients.h' | xargs clang-format -i
