// Batched dot product benchmarks at the W1 sizes, float32. Args: N, K.
//   BM_dot             a, b dense (N, K)
//   BM_dot_transposed  a, b transposed views (K-stride N) of dense (K, N) arrays, read in place
//                      by the column kernel
//   BM_dot_mixed       a transposed, b dense: a is copied densely first (see hpipe/dot.h); CPU only
#include "bench_util.h"

namespace hpipe::bench {
namespace {

template <Device D>
void BM_dot(benchmark::State &state) {
  const std::int64_t n = state.range(0), k = state.range(1);
  const auto a = random_array<float, 2>({n, k}, 1), b = random_array<float, 2>({n, k}, 2);
  Array<float, 1> out({n});
  const auto a_in = place_input(a, D), b_in = place_input(b, D);
  const auto result = place_output(out, D);
  time_calls<D>(state, [&] { batched_dot(a_in.view(), b_in.view(), result.view(), {D}); });
  set_compulsory_bytes(state, bytes_of(a) + bytes_of(b) + bytes_of(out));
}
// And short rows: 10^6 dot products of 3-vectors.
HPIPE_BENCHMARK(BM_dot, ->Args({500, 500})
                            ->Args({4096, 4096})
                            ->Args({4, 10000000})
                            ->Args({1000000, 3})
                            ->UseRealTime()
                            ->Unit(benchmark::kMicrosecond));

// The (N, K) view of a dense (K, N) array wherever it is placed.
View<const float, 2> transposed_view(const Placed<const float, 2> &kn) {
  const auto &v = kn.view();
  return View<const float, 2>(v.data(), {v.shape(1), v.shape(0)}, {1, v.shape(1)}, v.memory());
}

template <Device D>
void BM_dot_transposed(benchmark::State &state) {
  const std::int64_t n = state.range(0), k = state.range(1);
  const auto at = random_array<float, 2>({k, n}, 1), bt = random_array<float, 2>({k, n}, 2);
  const auto at_in = place_input(at, D), bt_in = place_input(bt, D);
  const auto a = transposed_view(at_in), b = transposed_view(bt_in);
  Array<float, 1> out({n});
  const auto result = place_output(out, D);
  time_calls<D>(state, [&] { batched_dot(a, b, result.view(), {D}); });
  set_compulsory_bytes(state, bytes_of(at) + bytes_of(bt) + bytes_of(out));
}
HPIPE_BENCHMARK(BM_dot_transposed, ->Args({500, 500})
                                       ->Args({4096, 4096})
                                       ->Args({4, 10000000})
                                       ->UseRealTime()
                                       ->Unit(benchmark::kMicrosecond));

void BM_dot_mixed(benchmark::State &state) {
  const std::int64_t n = state.range(0), k = state.range(1);
  const auto at = random_array<float, 2>({k, n}, 1), b = random_array<float, 2>({n, k}, 2);
  const View<const float, 2> a(at.data(), {n, k}, {1, n});
  Array<float, 1> out({n});
  for (auto _ : state) batched_dot(a, b.view(), out.view(), {Device::cpu});
  set_compulsory_bytes(state, bytes_of(at) + bytes_of(b) + bytes_of(out));
}
BENCHMARK(BM_dot_mixed)->Args({500, 500})->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace hpipe::bench
