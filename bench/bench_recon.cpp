// Reconstruction benchmarks at the size of the synthetic scene (1, 28, 256, 256), S = 2, 5 TV
// iterations: one GAP-TV iteration, one ADMM-TV iteration, the TV denoiser alone, and a whole GAP-TV
// run (on CUDA also with its arrays in device memory).
// Args: C, H, W, S, TV iterations, vectorial TV (0 or 1).
//
// Compulsory bytes are the minimum an iteration must move: the state cubes read once and written
// once, plus y, y1, the mask and Phi. The counter `moved_over_min` is the traffic the schedule
// moves by construction (the state cubes are read twice: once for A x, once for the data step)
// divided by that minimum.
#include "bench_util.h"

namespace hpipe::bench {
namespace {

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
    params.tv.vectorial = s.range(5) != 0;
    y = cassi_forward(x.view(), mask.view(), params.dispersion, {Device::cpu});
    phi = Array<float, 2>({y.shape(1), y.shape(2)});
    cassi_phi(mask.view(), x.shape(1), params.dispersion, phi.view(), {Device::cpu});
  }
  std::int64_t measurement_bytes() const { return bytes_of(y); }
  std::int64_t fixed_bytes() const { return bytes_of(y) + bytes_of(mask) + bytes_of(phi); }
};

void report(benchmark::State &state, std::int64_t minimum, std::int64_t moved) {
  set_compulsory_bytes(state, minimum);
  state.counters["moved_over_min"] = double(moved) / double(minimum);
}

template <Device D>
void BM_gap_tv_step(benchmark::State &state) {
  ReconBench b(state);
  Array<float, 3> y1(b.y.shape()), y1_next(b.y.shape());
  Array<float, 4> x_next(b.x.shape());
  const auto x = place_input(b.x, D);
  const auto y = place_input(b.y, D), y1_in = place_input(y1, D);
  const auto mask = place_input(b.mask, D), phi = place_input(b.phi, D);
  const auto x_out = place_output(x_next, D);
  const auto y1_out = place_output(y1_next, D);
  time_calls<D>(state, [&] {
    gap_tv_step(x.view(), y1_in.view(), y.view(), mask.view(), phi.view(), b.params, x_out.view(), y1_out.view(), {D});
  });
  const std::int64_t cube = bytes_of(b.x), small = b.fixed_bytes() + 2 * b.measurement_bytes();  // + y1, y1'
  report(state, 2 * cube + small, 3 * cube + small);
}

template <Device D>
void BM_admm_tv_step(benchmark::State &state) {
  ReconBench b(state);
  Array<float, 4> theta_next(b.x.shape()), b_next(b.x.shape());
  const auto dual = random_array<float, 4>(b.x.shape(), 4, -0.01, 0.01);
  const auto x = place_input(b.x, D), u = place_input(dual, D);
  const auto y = place_input(b.y, D);
  const auto mask = place_input(b.mask, D), phi = place_input(b.phi, D);
  const auto theta_out = place_output(theta_next, D), b_out = place_output(b_next, D);
  time_calls<D>(state, [&] {
    admm_tv_step(x.view(), u.view(), y.view(), mask.view(), phi.view(), b.params, theta_out.view(), b_out.view(), {D});
  });
  const std::int64_t cube = bytes_of(b.x), small = b.fixed_bytes();
  report(state, 4 * cube + small, 6 * cube + small);
}

template <Device D>
void BM_tv_denoise(benchmark::State &state) {
  ReconBench b(state);
  Array<float, 4> out(b.x.shape());
  const auto x = place_input(b.x, D);
  const auto result = place_output(out, D);
  time_calls<D>(state, [&] { tv_denoise(x.view(), b.params.tv, result.view(), {D}); });
  report(state, 2 * bytes_of(b.x), 2 * bytes_of(b.x));
}

// A whole GAP-TV run of kRunIterations on host arrays, as the CLI and Python call it: on CUDA its
// state stays on the device between iterations (compare with kRunIterations x BM_cuda_gap_tv_step).
constexpr int kRunIterations = 10;
template <Device D>
void BM_gap_tv_run(benchmark::State &state) {
  ReconBench b(state);
  b.params.iterations = kRunIterations;
  Array<float, 4> x(b.x.shape());
  const Mask<float> mask(b.mask.view());
  for (auto _ : state) gap_tv(b.y.view(), mask, b.params, x.view(), {}, {D});
}

#define HPIPE_RECON_BENCH(fn)                             \
  HPIPE_BENCHMARK(fn, ->Args({28, 256, 256, 2, 5, 0})     \
                          ->Args({28, 256, 256, 2, 5, 1}) \
                          ->UseRealTime()                 \
                          ->Unit(benchmark::kMillisecond))
HPIPE_RECON_BENCH(BM_gap_tv_step);
HPIPE_RECON_BENCH(BM_admm_tv_step);
HPIPE_BENCHMARK(BM_gap_tv_run, ->Args({28, 256, 256, 2, 5, 0})->UseRealTime()->Unit(benchmark::kMillisecond));

// The same run with y, the mask and x in CUDA memory, as CUDA tensors give them (hpipe.gap_tv from
// PyTorch): only the auxiliary array's zeros are copied.
void BM_cuda_gap_tv_run_in_device_memory(benchmark::State &state) {
  ReconBench b(state);
  b.params.iterations = kRunIterations;
  Array<float, 4> x(b.x.shape());
  const auto y = place_input(b.y, Device::cuda);
  const auto mask = place_input(b.mask, Device::cuda);
  const auto out = place_output(x, Device::cuda);
  time_calls<Device::cuda>(
      state, [&] { gap_tv(y.view(), Mask<float>(mask.view()), b.params, out.view(), {}, {Device::cuda}); });
}
HPIPE_CUDA_BENCHMARK(
    BM_cuda_gap_tv_run_in_device_memory, ->Args({28, 256, 256, 2, 5, 0})->UseRealTime()->Unit(benchmark::kMillisecond));
// The same pixels as 7 images of 512 x 512, whose planes outgrow a core's L2 (strips of rows).
HPIPE_BENCHMARK(BM_tv_denoise, ->Args({28, 256, 256, 2, 5, 0})
                                   ->Args({28, 256, 256, 2, 5, 1})
                                   ->Args({7, 512, 512, 2, 5, 0})
                                   ->UseRealTime()
                                   ->Unit(benchmark::kMillisecond));

}  // namespace
}  // namespace hpipe::bench
