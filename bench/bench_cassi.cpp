// CASSI benchmarks at the W4 size (16, 28, 256, 256), S = 2, and on one image of it (B = 1, in
// cache: an unrolled network's or a reconstruction's call).
// Args: B, C, H, W, S.
#include "bench_util.h"

namespace hpipe::bench {
namespace {

struct CassiBench {
  Array<float, 4> x;
  Array<float, 2> mask;
  Array<float, 3> y;
  Dispersion d;
  explicit CassiBench(const benchmark::State &s)
      : x(random_array<float, 4>({s.range(0), s.range(1), s.range(2), s.range(3)}, 1)),
        mask(random_array<float, 2>({s.range(2), s.range(3)}, 2)),
        d{static_cast<int>(s.range(4)), Axis::width} {
    y = random_array<float, 3>(cassi_measurement_shape(x.shape(), d), 3);
  }
};

template <Device D, Wait W = Wait::each_call>
void BM_cassi_forward(benchmark::State &state) {
  CassiBench b(state);
  Array<float, 3> y(b.y.shape());
  const auto x = place_input(b.x, D);
  const auto mask = place_input(b.mask, D);
  const auto out = place_output(y, D);
  time_calls<D, W>(state, [&] { cassi_forward(x.view(), mask.view(), b.d, out.view(), {D}); });
  set_compulsory_bytes(state, bytes_of(b.x) + bytes_of(b.mask) + bytes_of(y));
}

// Measurement -> cube ops share one shape of benchmark.
template <Device D, Wait W,
          void (*Op)(View<const float, 3>, const Mask<float> &, Dispersion, View<float, 4>, const Options &)>
void measurement_to_cube(benchmark::State &state) {
  CassiBench b(state);
  Array<float, 4> x(b.x.shape());
  const auto y = place_input(b.y, D);
  const auto mask = place_input(b.mask, D);
  const auto out = place_output(x, D);
  time_calls<D, W>(state, [&] { Op(y.view(), mask.view(), b.d, out.view(), {D}); });
  set_compulsory_bytes(state, bytes_of(b.y) + bytes_of(b.mask) + bytes_of(x));
}
template <Device D, Wait W = Wait::each_call>
void BM_cassi_adjoint(benchmark::State &state) {
  measurement_to_cube<D, W, cassi_adjoint>(state);
}
template <Device D, Wait W = Wait::each_call>
void BM_cassi_pinv(benchmark::State &state) {
  measurement_to_cube<D, W, cassi_pinv>(state);
}
template <Device D, Wait W = Wait::each_call>
void BM_cassi_pinv_alpha(benchmark::State &state) {
  measurement_to_cube<D, W, cassi_pinv_alpha>(state);
}

// The shifts: the cube zero-padded into its sheared frame (MST / DAUHST's shift_3d) and cropped
// back (shift_back_3d).
template <Device D>
void BM_cassi_shift(benchmark::State &state) {
  CassiBench b(state);
  const auto meas = cassi_measurement_shape(b.x.shape(), b.d);
  Array<float, 4> shifted({b.x.shape()[0], b.x.shape()[1], meas[1], meas[2]});
  const auto x = place_input(b.x, D);
  const auto out = place_output(shifted, D);
  time_calls<D>(state, [&] { cassi_shift(x.view(), b.d, out.view(), {D}); });
  set_compulsory_bytes(state, bytes_of(b.x) + bytes_of(shifted));
}
template <Device D>
void BM_cassi_shift_back(benchmark::State &state) {
  CassiBench b(state);
  const auto meas = cassi_measurement_shape(b.x.shape(), b.d);
  const auto shifted = random_array<float, 4>({b.x.shape()[0], b.x.shape()[1], meas[1], meas[2]}, 4);
  Array<float, 4> x(b.x.shape());
  const auto in = place_input(shifted, D);
  const auto out = place_output(x, D);
  time_calls<D>(state, [&] { cassi_shift_back(in.view(), b.d, out.view(), {D}); });
  set_compulsory_bytes(state, 2 * bytes_of(x));  // the crop read, the cube written
}

#define HPIPE_CASSI_BENCH(fn) \
  HPIPE_BENCHMARK(fn, ->Args({16, 28, 256, 256, 2})->Args({1, 28, 256, 256, 2})->UseRealTime()->Unit(benchmark::kMillisecond))
HPIPE_CASSI_BENCH(BM_cassi_forward);
HPIPE_CASSI_BENCH(BM_cassi_adjoint);
HPIPE_CASSI_BENCH(BM_cassi_pinv);
HPIPE_CASSI_BENCH(BM_cassi_pinv_alpha);
HPIPE_CASSI_BENCH(BM_cassi_shift);
HPIPE_CASSI_BENCH(BM_cassi_shift_back);

// W4 on CUDA with calls queued (Wait::queued): a reconstruction loop's time per call.
constexpr BenchmarkFunction BM_cuda_cassi_forward_queued = BM_cassi_forward<Device::cuda, Wait::queued>;
constexpr BenchmarkFunction BM_cuda_cassi_adjoint_queued = BM_cassi_adjoint<Device::cuda, Wait::queued>;
constexpr BenchmarkFunction BM_cuda_cassi_pinv_queued = BM_cassi_pinv<Device::cuda, Wait::queued>;
constexpr BenchmarkFunction BM_cuda_cassi_pinv_alpha_queued = BM_cassi_pinv_alpha<Device::cuda, Wait::queued>;
#define HPIPE_CASSI_QUEUED_BENCH(fn) \
  HPIPE_CUDA_BENCHMARK(fn, ->Args({16, 28, 256, 256, 2})->UseManualTime()->Unit(benchmark::kMillisecond))
HPIPE_CASSI_QUEUED_BENCH(BM_cuda_cassi_forward_queued);
HPIPE_CASSI_QUEUED_BENCH(BM_cuda_cassi_adjoint_queued);
HPIPE_CASSI_QUEUED_BENCH(BM_cuda_cassi_pinv_queued);
HPIPE_CASSI_QUEUED_BENCH(BM_cuda_cassi_pinv_alpha_queued);

}  // namespace
}  // namespace hpipe::bench
