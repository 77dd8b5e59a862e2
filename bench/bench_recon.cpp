// Reconstruction benchmarks at the size of the synthetic scene (1, 28, 256, 256), S = 2, 5 TV
// iterations: one GAP-TV iteration, one ADMM-TV iteration, and the TV denoiser alone, on the CPU.
// Args: C, H, W, S, TV iterations.
//
// Compulsory bytes are the minimum an iteration must move: the state cubes read once and written
// once, plus y, y1, the mask and Phi. The counter `moved_over_min` is the traffic the schedule
// moves by construction (the state cubes are read twice: once for A x, once for the data step)
// divided by that minimum.
#include "bench_util.h"

namespace hpipe::bench {
namespace {

const Options kCpu{Device::cpu};

struct ReconBench {
  Array<float, 4> x;
  Array<float, 2> mask;
  Array<float, 3> y;
  Array<float, 2> phi;
  ReconParams params;
  explicit ReconBench(const benchmark::State &s)
      : x(random_array<float, 4>({1, s.range(0), s.range(1), s.range(2)}, 1)),
        mask(random_array<float, 2>({s.range(1), s.range(2)}, 2)) {
    params.dispersion = {static_cast<int>(s.range(3)), Axis::width};
    params.tv.iterations = static_cast<int>(s.range(4));
    y = cassi_forward(x.view(), mask.view(), params.dispersion, kCpu);
    phi = Array<float, 2>({y.shape(1), y.shape(2)});
    cassi_phi(mask.view(), x.shape(1), params.dispersion, phi.view(), kCpu);
  }
  std::int64_t measurement_bytes() const { return bytes_of(y); }
  std::int64_t fixed_bytes() const { return bytes_of(y) + bytes_of(mask) + bytes_of(phi); }
};

void report(benchmark::State &state, std::int64_t minimum, std::int64_t moved) {
  set_compulsory_bytes(state, minimum);
  state.counters["moved_over_min"] = double(moved) / double(minimum);
}

void BM_gap_tv_step(benchmark::State &state) {
  ReconBench b(state);
  Array<float, 3> y1(b.y.shape()), y1_next(b.y.shape());
  Array<float, 4> x_next(b.x.shape());
  for (auto _ : state)
    gap_tv_step(b.x.view(), y1.view(), b.y.view(), b.mask.view(), b.phi.view(), b.params, x_next.view(),
                y1_next.view(), kCpu);
  const std::int64_t cube = bytes_of(b.x), small = b.fixed_bytes() + 2 * b.measurement_bytes();  // + y1, y1'
  report(state, 2 * cube + small, 3 * cube + small);
}

void BM_admm_tv_step(benchmark::State &state) {
  ReconBench b(state);
  Array<float, 4> theta_next(b.x.shape()), b_next(b.x.shape());
  const auto dual = random_array<float, 4>(b.x.shape(), 4, -0.01, 0.01);
  for (auto _ : state)
    admm_tv_step(b.x.view(), dual.view(), b.y.view(), b.mask.view(), b.phi.view(), b.params, theta_next.view(),
                 b_next.view(), kCpu);
  const std::int64_t cube = bytes_of(b.x), small = b.fixed_bytes();
  report(state, 4 * cube + small, 6 * cube + small);
}

void BM_tv_denoise(benchmark::State &state) {
  ReconBench b(state);
  Array<float, 4> out(b.x.shape());
  for (auto _ : state) tv_denoise(b.x.view(), b.params.tv, out.view(), kCpu);
  report(state, 2 * bytes_of(b.x), 2 * bytes_of(b.x));
}

#define HPIPE_RECON_BENCH(fn) \
  BENCHMARK(fn)->Args({28, 256, 256, 2, 5})->UseRealTime()->Unit(benchmark::kMillisecond)
HPIPE_RECON_BENCH(BM_gap_tv_step);
HPIPE_RECON_BENCH(BM_admm_tv_step);
HPIPE_RECON_BENCH(BM_tv_denoise);

}  // namespace
}  // namespace hpipe::bench
