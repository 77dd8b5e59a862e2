// Transcendental benchmarks at the W2 size: 10^8 elements (10000 x 10000), uniform in [0.05, 1) (erf
// float64 also of a normal CDF's arguments), preallocated output. Elementwise: one read and one write per
// element; logsumexp axis 0: one read per element (the 10000 outputs are negligible).
#include <cmath>
#include <random>

#include "bench_util.h"

namespace hpipe::bench {
namespace {

// The W2 input, made once per type and size (filling 10^8 random values takes seconds).
template <class T>
const Array<T, 2> &w2_input(std::int64_t rows, std::int64_t columns) {
  static Array<T, 2> x;
  if (x.shape(0) != rows || x.shape(1) != columns) x = random_array<T, 2>({rows, columns}, 7);
  return x;
}

// A normal CDF's arguments, Phi(z) = (1 + erf(z / sqrt(2))) / 2 for standard normal z: a sixth of
// them outside [-1, 1], so that three quarters of the vectors compute erf float64's full form
// (W2's inputs, in [0.05, 1), take only its cheap form).
const Array<double, 2> &normal_cdf_arguments(std::int64_t rows, std::int64_t columns) {
  static Array<double, 2> x;
  if (x.shape(0) != rows || x.shape(1) != columns) {
    x = Array<double, 2>({rows, columns});
    std::mt19937 rng(7);
    std::normal_distribution<double> z(0.0, 1.0);
    for (std::int64_t i = 0; i < x.size(); i++) x.data()[i] = z(rng) / std::sqrt(2.0);
  }
  return x;
}

template <Device D, class T, void (*Op)(View<const T, 2>, View<T, 2>, const Options &),
          const Array<T, 2> &(*Input)(std::int64_t, std::int64_t) = w2_input<T>>
void elementwise(benchmark::State &state) {
  const auto &x = Input(state.range(0), state.range(1));
  Array<T, 2> y(x.shape());
  const auto in = place_input(x, D);
  const auto out = place_output(y, D);
  time_calls<D>(state, [&] { Op(in.view(), out.view(), {D}); });
  set_compulsory_bytes(state, bytes_of(x) + bytes_of(y));
}
template <Device D>
void BM_exp_f32(benchmark::State &state) {
  elementwise<D, float, hpipe::exp>(state);
}
template <Device D>
void BM_log_f32(benchmark::State &state) {
  elementwise<D, float, hpipe::log>(state);
}
template <Device D>
void BM_erf_f32(benchmark::State &state) {
  elementwise<D, float, hpipe::erf>(state);
}
template <Device D>
void BM_exp_f64(benchmark::State &state) {
  elementwise<D, double, hpipe::exp>(state);
}
template <Device D>
void BM_log_f64(benchmark::State &state) {
  elementwise<D, double, hpipe::log>(state);
}
template <Device D>
void BM_erf_f64(benchmark::State &state) {
  elementwise<D, double, hpipe::erf>(state);
}
template <Device D>
void BM_erf_f64_normal_cdf(benchmark::State &state) {
  elementwise<D, double, hpipe::erf, normal_cdf_arguments>(state);
}

// Args: rows, columns, axis.
template <Device D, class T>
void logsumexp(benchmark::State &state) {
  const auto &x = w2_input<T>(state.range(0), state.range(1));
  const int axis = static_cast<int>(state.range(2));
  Array<T, 1> y({x.shape(1 - axis)});
  const auto in = place_input(x, D);
  const auto out = place_output(y, D);
  time_calls<D>(state, [&] { hpipe::logsumexp(in.view(), axis, out.view(), {D}); });
  set_compulsory_bytes(state, bytes_of(x) + bytes_of(y));
}
template <Device D>
void BM_logsumexp_f32(benchmark::State &state) {
  logsumexp<D, float>(state);
}
template <Device D>
void BM_logsumexp_f64(benchmark::State &state) {
  logsumexp<D, double>(state);
}

#define HPIPE_MATH_BENCH(fn) HPIPE_BENCHMARK(fn, ->Args({10000, 10000})->UseRealTime()->Unit(benchmark::kMillisecond))
HPIPE_MATH_BENCH(BM_exp_f32);
HPIPE_MATH_BENCH(BM_log_f32);
HPIPE_MATH_BENCH(BM_erf_f32);
HPIPE_MATH_BENCH(BM_exp_f64);
HPIPE_MATH_BENCH(BM_log_f64);
HPIPE_MATH_BENCH(BM_erf_f64);
HPIPE_MATH_BENCH(BM_erf_f64_normal_cdf);
// And a softmax's normaliser along the last axis: 10^6 rows of 10 classes (short rows: transposed
// in tasks), 125000 rows of 32 and 4096 rows of 1000 (the rows kernel); down 10^5 rows of 100
// columns (fewer columns than a task's: the rows in segments).
HPIPE_BENCHMARK(BM_logsumexp_f32, ->Args({10000, 10000, 0})
                                      ->Args({10000, 10000, 1})
                                      ->Args({1000000, 10, 1})
                                      ->Args({125000, 32, 1})
                                      ->Args({4096, 1000, 1})
                                      ->Args({100000, 100, 0})
                                      ->UseRealTime()
                                      ->Unit(benchmark::kMillisecond));
HPIPE_BENCHMARK(
    BM_logsumexp_f64, ->Args({10000, 10000, 0})->Args({10000, 10000, 1})->UseRealTime()->Unit(benchmark::kMillisecond));

}  // namespace
}  // namespace hpipe::bench
