// Batched dot product benchmarks at the W1 sizes, float32 on the CPU. Args: N, K.
//   BM_dot             a, b dense (N, K)
//   BM_dot_transposed  a, b transposed views (K-stride N) of dense (K, N) arrays, read in place
//                      by the column kernel
//   BM_dot_mixed       a transposed, b dense: a is copied densely first (see hpipe/dot.h)
#include "bench_util.h"

namespace hpipe::bench {
namespace {

const Options kCpu{Device::cpu};

void BM_dot(benchmark::State &state) {
  const std::int64_t n = state.range(0), k = state.range(1);
  const auto a = random_array<float, 2>({n, k}, 1), b = random_array<float, 2>({n, k}, 2);
  Array<float, 1> out({n});
  for (auto _ : state) batched_dot(a.view(), b.view(), out.view(), kCpu);
  set_compulsory_bytes(state, bytes_of(a) + bytes_of(b) + bytes_of(out));
}
BENCHMARK(BM_dot)->Args({500, 500})->Args({4096, 4096})->Args({4, 10000000})->UseRealTime()->Unit(
    benchmark::kMicrosecond);

void BM_dot_transposed(benchmark::State &state) {
  const std::int64_t n = state.range(0), k = state.range(1);
  const auto at = random_array<float, 2>({k, n}, 1), bt = random_array<float, 2>({k, n}, 2);
  const View<const float, 2> a(at.data(), {n, k}, {1, n}), b(bt.data(), {n, k}, {1, n});
  Array<float, 1> out({n});
  for (auto _ : state) batched_dot(a, b, out.view(), kCpu);
  set_compulsory_bytes(state, bytes_of(at) + bytes_of(bt) + bytes_of(out));
}
BENCHMARK(BM_dot_transposed)
    ->Args({500, 500})
    ->Args({4096, 4096})
    ->Args({4, 10000000})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_dot_mixed(benchmark::State &state) {
  const std::int64_t n = state.range(0), k = state.range(1);
  const auto at = random_array<float, 2>({k, n}, 1), b = random_array<float, 2>({n, k}, 2);
  const View<const float, 2> a(at.data(), {n, k}, {1, n});
  Array<float, 1> out({n});
  for (auto _ : state) batched_dot(a, b.view(), out.view(), kCpu);
  set_compulsory_bytes(state, bytes_of(at) + bytes_of(b) + bytes_of(out));
}
BENCHMARK(BM_dot_mixed)->Args({500, 500})->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace hpipe::bench
