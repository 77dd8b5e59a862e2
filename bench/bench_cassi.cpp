// CASSI benchmarks at the W4 size (16, 28, 256, 256), S = 2, on the CPU.
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

const Options kCpu{Device::cpu};

void BM_cassi_forward(benchmark::State &state) {
  CassiBench b(state);
  Array<float, 3> y(b.y.shape());
  for (auto _ : state) cassi_forward(b.x.view(), b.mask.view(), b.d, y.view(), kCpu);
  set_compulsory_bytes(state, bytes_of(b.x) + bytes_of(b.mask) + bytes_of(y));
}

// Measurement -> cube ops share one shape of benchmark.
template <void (*Op)(View<const float, 3>, const Mask<float> &, Dispersion, View<float, 4>, const Options &)>
void measurement_to_cube(benchmark::State &state) {
  CassiBench b(state);
  Array<float, 4> x(b.x.shape());
  for (auto _ : state) Op(b.y.view(), b.mask.view(), b.d, x.view(), kCpu);
  set_compulsory_bytes(state, bytes_of(b.y) + bytes_of(b.mask) + bytes_of(x));
}
void BM_cassi_adjoint(benchmark::State &state) { measurement_to_cube<cassi_adjoint>(state); }
void BM_cassi_pinv(benchmark::State &state) { measurement_to_cube<cassi_pinv>(state); }
void BM_cassi_pinv_alpha(benchmark::State &state) { measurement_to_cube<cassi_pinv_alpha>(state); }

#define HPIPE_CASSI_BENCH(fn) \
  BENCHMARK(fn)->Args({16, 28, 256, 256, 2})->UseRealTime()->Unit(benchmark::kMillisecond)
HPIPE_CASSI_BENCH(BM_cassi_forward);
HPIPE_CASSI_BENCH(BM_cassi_adjoint);
HPIPE_CASSI_BENCH(BM_cassi_pinv);
HPIPE_CASSI_BENCH(BM_cassi_pinv_alpha);

}  // namespace
}  // namespace hpipe::bench
