#!/usr/bin/env bash
# The GPU checks, in one run on a machine with an NVIDIA GPU and the driver but no Halide
# (see README "CUDA"). Two steps:
#   scripts/gpu-check.sh pack         here, after a build with CUDA on: the test and benchmark
#                                     binaries and an install tree (static libraries) in .gpu/; with
#                                     BUNDLE_OPS=a,b also hpipe-tune's CUDA bundle of those ops
#                                     (BUNDLE_VARIANTS per op, default 40; docs/tuning.md). All of it
#                                     also in .gpu.tar.xz, a seventh of the size, to carry there (a
#                                     bundle of 320 variants made .gpu/ 71 MB, .gpu.tar.xz 9.3 MB).
#   scripts/gpu-check.sh run OUTDIR   there, in the source tree with .gpu/ (or .gpu.tar.xz) beside
#                                     it: the CUDA tests, the bundle if packed (its records:
#                                     OUTDIR/tune.jsonl, for `hpipe-tune import`), the BM_cuda
#                                     benchmarks, the Python suite against an extension built there
#                                     (g++, pybind11 and PyTorch needed), the PyTorch peers, Nsight
#                                     Compute on the CASSI kernels where ncu is found, and CASSI A
#                                     under other register caps. SKIP="ncu registers" leaves those
#                                     steps out (names as in the logs).
# Each step has a time limit and its own log in OUTDIR (at most 8 files); a failed step does not
# stop the others, and the exit status says whether any failed. On an H100 host (16 cores,
# 2026-11-27): tests 35 s, benchmarks 100-150 s, Python about 60 s, ncu 40 s; a bundle of 320
# variants 3.6 minutes. Against tests/fake_cuda (LD_LIBRARY_PATH=build/tests/fake_cuda) the
# whole run goes through on a machine without a GPU, its figures and results meaningless: a check
# of the script itself.
set -u
pack=.gpu

case "${1:-}" in
pack)
  set -e
  build=${BUILD:-build}
  cmake --build "$build"
  rm -rf "$pack"
  cmake --install "$build" --prefix "$pack/prefix" >/dev/null
  rm -rf "$pack/prefix/bin" "$pack"/prefix/lib/python*  # the CLI's image libraries and this Python's module stay here
  strip --strip-debug "$pack"/prefix/lib/*.a
  cp "$build/tests/hpipe_tests" "$build/bench/hpipe_bench" "$pack/"
  mkdir "$pack/lib"  # Google Benchmark's shared library, which Debian has and that machine may not
  cp -L $(ldd "$pack/hpipe_bench" | awk '/libbenchmark/ { print $3 }') "$pack/lib/"
  strip "$pack/hpipe_tests" "$pack/hpipe_bench"
  if [ -n "${BUNDLE_OPS:-}" ]; then
    "$build/tools/tune/hpipe-tune" bundle --ops "$BUNDLE_OPS" --max-variants "${BUNDLE_VARIANTS:-40}" --out "$pack/bundle"
    find "$pack/bundle" -type f ! -name hpipe-tune-bundle -delete
  fi
  tar -cf - "$pack" | xz -T0 >"$pack.tar.xz"
  du -sh "$pack" "$pack.tar.xz"
  ;;
run)
  out=${2:?usage: $0 run OUTDIR}
  mkdir -p "$out"
  [ -d "$pack" ] || tar -xJf "$pack.tar.xz" || exit
  failed=()
  export LD_LIBRARY_PATH="$PWD/$pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # step NAME SECONDS COMMAND...: the command's output in OUTDIR/NAME.log and on stdout.
  step() {
    local name=$1 seconds=$2
    shift 2
    case " ${SKIP:-} " in *" $name "*) echo "== $name skipped"; return ;; esac
    echo "== $name ($(date +%T))"
    timeout "$seconds" "$@" >"$out/$name.log" 2>&1
    local status=$?
    tail -n 25 "$out/$name.log"
    [ $status -eq 0 ] || { failed+=("$name (exit $status)"); echo "== $name failed: exit $status"; }
  }
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  step cuda_tests 100 "$pack/hpipe_tests" --gtest_filter='*Cuda*:*cuda*'
  # The bundle next: what it measures decides knobs, and a session's device time may end before
  # the later steps.
  if [ -x "$pack/bundle/hpipe-tune-bundle" ]; then
    step tune 240 "$pack/bundle/hpipe-tune-bundle" --out "$out/tune.jsonl"
  fi
  step bench 240 "$pack/hpipe_bench" --benchmark_filter=BM_cuda --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_out="$out/bench_cuda.json" --benchmark_out_format=json
  # The extension built here against the install tree, then the Python suite with it.
  python_suite() {
    local site
    site=$(mktemp -d) && mkdir -p "$site/hpipe" || return
    # Bound at load time with its GOT read-only (-z now, -z relro): the crash below jumped through
    # a lazily bound PLT entry, so a stray write into the GOT would fault where it is made.
    # shellcheck disable=SC2046  # pybind11's include flags are several words
    ${CXX:-c++} -std=c++17 -O2 -g -fPIC -shared -fvisibility=hidden -I"$pack/prefix/include" $(python3 -m pybind11 --includes) \
      python/src/module.cpp python/src/arrays.cpp -Wl,--start-group "$pack"/prefix/lib/*.a -Wl,--end-group -ldl -lpthread \
      -Wl,-z,now,-z,relro \
      -o "$site/hpipe/_core$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')" || return
    export PYTHONPATH="$PWD/python:$site" PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
    local suite=(python3 -m pytest -q -p no:cacheprovider -rs tests/python) status
    "${suite[@]}"
    status=$?
    # A crash in the suite's first call on CUDA, three times on 2026-11-27 (docs/python.md): the
    # suite again under cuda-gdb, with where the faulting address lies.
    if [ $status -ge 128 ] && command -v cuda-gdb >/dev/null; then
      echo "== the suite crashed (exit $status); again under cuda-gdb"
      cuda-gdb -q -batch -ex run -ex bt -ex 'info symbol $pc' -ex 'x/4i $pc' -ex 'p $_siginfo._sifields._sigfault.si_addr' \
        -ex 'info sharedlibrary' -ex 'info threads' --args "${suite[@]}"
    fi
    [ $status -eq 0 ] || return $status
    python3 bench/torch_peers.py --hpipe-bench none --repeats 10
  }
  # Nsight Compute on the CASSI kernels, past each benchmark's first calls (module loads); A⁺ and the
  # inverse are two kernels a call.
  ncu_cassi() {
    for op in cassi_forward cassi_pinv cassi_pinv_alpha; do
      ncu --launch-skip 8 --launch-count 2 --section SpeedOfLight --section MemoryWorkloadAnalysis \
        --section Occupancy --section LaunchStats --section WarpStateStats \
        "$pack/hpipe_bench" --benchmark_filter="^BM_cuda_$op/" --benchmark_min_time=0.01 || return
    done
  }
  export -f python_suite ncu_cassi
  export pack
  step python 200 bash -c python_suite
  if command -v ncu >/dev/null; then step ncu 90 bash -c ncu_cassi; fi
  # CASSI A under other register caps of the driver's JIT (Halide's runtime: 64, which leaves A at 50%
  # occupancy; 32 spilled and was slower, 128 no faster: docs/performance-notes.md).
  registers() {
    for cap in 40 48 56 64; do
      echo "== HL_CUDA_JIT_MAX_REGISTERS=$cap"
      HL_CUDA_JIT_MAX_REGISTERS=$cap "$pack/hpipe_bench" --benchmark_filter='^BM_cuda_cassi_(forward|pinv)/' \
        --benchmark_repetitions=3 --benchmark_report_aggregates_only=true || return
    done
  }
  export -f registers
  step registers 90 bash -c registers
  [ ${#failed[@]} -eq 0 ] || { printf 'failed: %s\n' "${failed[@]}"; exit 1; }
  ;;
*)
  sed -n '2,12p' "$0"
  exit 2
  ;;
esac
