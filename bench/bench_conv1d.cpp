// Batched 1-D convolution benchmarks at the W3 sizes, float32, mode full.
// Args: N, La, Lv.
//   BM_conv1d_rows    one kernel per row, v (N, Lv)
//   BM_conv1d_shared  one kernel for every row, v (Lv,)
#include "bench_util.h"

namespace hpipe::bench {
namespace {

template <Device D, int KernelRank>
void run_conv1d(benchmark::State &state) {
  const std::int64_t n = state.range(0), la = state.range(1), lv = state.range(2);
  const auto a = random_array<float, 2>({n, la}, 1);
  Array<float, KernelRank> v;
  if constexpr (KernelRank == 2) {
    v = random_array<float, 2>({n, lv}, 2);
  } else {
    v = random_array<float, 1>({lv}, 2);
  }
  Array<float, 2> out({n, conv1d_length(la, lv, ConvMode::full)});
  const auto a_in = place_input(a, D);
  const auto v_in = place_input(v, D);
  const auto result = place_output(out, D);
  time_calls<D>(state, [&] { conv1d(a_in.view(), v_in.view(), ConvMode::full, result.view(), {D}); });
  set_compulsory_bytes(state, bytes_of(a) + bytes_of(v) + bytes_of(out));
}
template <Device D>
void BM_conv1d_rows(benchmark::State &state) {
  run_conv1d<D, 2>(state);
}
template <Device D>
void BM_conv1d_shared(benchmark::State &state) {
  run_conv1d<D, 1>(state);
}

// W3 case A (5 rows, 5 * 7), the large batch, and a long-signal generic-path (31 taps) case.
HPIPE_BENCHMARK(BM_conv1d_rows, ->Args({5, 5, 7})
                                    ->Args({100000, 9, 7})
                                    ->Args({1000, 1000, 31})
                                    ->UseRealTime()
                                    ->Unit(benchmark::kMicrosecond));
// What the host spends on one call with CUDA memory and tiny inputs (W3 case A): calls queued back
// to back without waiting, so that the GPU, a few µs a call, keeps up and the time per call is the
// host's. BM_cuda_conv1d_rows/5/5/7 is the same call's whole latency.
void BM_cuda_queued_call(benchmark::State &state) {
  const auto a = random_array<float, 2>({5, 5}, 1), v = random_array<float, 2>({5, 7}, 2);
  Array<float, 2> out({5, conv1d_length(5, 7, ConvMode::full)});
  const auto a_in = place_input(a, Device::cuda), v_in = place_input(v, Device::cuda);
  const auto result = place_output(out, Device::cuda);
  for (auto _ : state) conv1d(a_in.view(), v_in.view(), ConvMode::full, result.view(), {Device::cuda});
  test::synchronize_cuda();
}
HPIPE_CUDA_BENCHMARK(BM_cuda_queued_call, ->UseRealTime()->Unit(benchmark::kMicrosecond));

// W3 case B: 100 signals of 9 against one kernel of 6.
HPIPE_BENCHMARK(
    BM_conv1d_shared, ->Args({100, 9, 6})->Args({100000, 9, 7})->UseRealTime()->Unit(benchmark::kMicrosecond));

}  // namespace
}  // namespace hpipe::bench
