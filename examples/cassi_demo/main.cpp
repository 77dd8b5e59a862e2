// CASSI demo: a synthetic 28-band scene and a random coded mask; forward model A, pseudo-inverse
// A+ = A^T (y / Phi), and the round trip A(A+(A x)) against A x; then the scene reconstructed from
// y by GAP-TV and ADMM-TV, with PSNR and SSIM against the truth. Runs on the CPU.
#include <hpipe/hpipe.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <initializer_list>

namespace {

template <class F>
double best_ms(F &&f, int repeats = 5) {
  double best = 1e300;
  for (int i = 0; i < repeats; i++) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main() try {
  const std::int64_t C = 28, H = 256, W = 256;
  const hpipe::Dispersion d{2, hpipe::Axis::width};
  const hpipe::Options cpu{hpipe::Device::cpu};

  const hpipe::Array<float, 3> scene = hpipe::synth_scene(C, H, W);
  const hpipe::Array<float, 2> mask = hpipe::synth_mask(H, W, 7);
  const hpipe::View<const float, 4> x(scene.data(), {1, C, H, W});

  const auto y = hpipe::cassi_forward(x, mask.view(), d, cpu);
  const auto x_hat = hpipe::cassi_pinv(y.view(), mask.view(), C, d, cpu);
  const auto y_again = hpipe::cassi_forward(x_hat.view(), mask.view(), d, cpu);

  double err = 0, scale = 0;
  for (std::int64_t i = 0; i < y.size(); i++) {
    err += std::abs(double(y_again.data()[i]) - double(y.data()[i]));
    scale += std::abs(double(y.data()[i]));
  }
  std::printf("scene x        (B, C, H, W) = (1, %lld, %lld, %lld)\n", (long long)C, (long long)H, (long long)W);
  std::printf("measurement y  (B, H, W')   = (%lld, %lld, %lld), step %d along width\n", (long long)y.shape(0),
              (long long)y.shape(1), (long long)y.shape(2), d.step);
  std::printf("round trip     mean |A(A+ y) - y| = %.3g   (mean |y| = %.3g)\n", err / double(y.size()),
              scale / double(y.size()));

  // Times at the W4 workload size: a batch of 16 cubes.
  const std::int64_t B = 16;
  hpipe::Array<float, 4> batch({B, C, H, W});
  for (std::int64_t b = 0; b < B; b++)
    std::copy(scene.data(), scene.data() + scene.size(), batch.data() + b * scene.size());
  hpipe::Array<float, 3> yb(hpipe::cassi_measurement_shape(batch.shape(), d));
  hpipe::Array<float, 4> xb(batch.shape());
  const double t_forward = best_ms([&] { hpipe::cassi_forward(batch.view(), mask.view(), d, yb.view(), cpu); });
  const double t_pinv = best_ms([&] { hpipe::cassi_pinv(yb.view(), mask.view(), d, xb.view(), cpu); });
  std::printf("times at (16, 28, 256, 256), %d threads, best of 5: A %.2f ms, A+ %.2f ms\n", hpipe::num_threads(),
              t_forward, t_pinv);

  // Reconstruction from the single measurement y: what `hpipe recon gap-tv|admm-tv --truth` prints.
  const hpipe::View<const float, 3> truth(scene.data(), {C, H, W});
  const auto first = [&](const hpipe::Array<float, 4> &cube) {
    return hpipe::View<const float, 3>(cube.data(), {C, H, W});
  };
  const auto q_pinv = hpipe::band_quality(first(x_hat), truth);
  std::printf("pseudo-inverse: mean PSNR %.2f dB, mean SSIM %.4f\n", q_pinv.mean_psnr, q_pinv.mean_ssim);
  hpipe::ReconParams params;  // 20 iterations, lambda 1, TV weight 0.1 x 5 iterations, gamma 0.01
  params.dispersion = d;
  for (const auto method : {hpipe::ReconMethod::gap_tv, hpipe::ReconMethod::admm_tv}) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto x_rec = hpipe::reconstruct(
        method, y.view(), mask.view(), C, params,
        [](const hpipe::IterationInfo &it) {
          if (it.iteration % 5 == 0)
            std::printf("  iteration %2d/%d  ||y - A x|| = %.5f\n", it.iteration, it.iterations, it.residual);
        },
        cpu);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const auto q = hpipe::band_quality(first(x_rec), truth);
    std::printf("%-7s: mean PSNR %.2f dB, mean SSIM %.4f (%d iterations in %.0f ms, residuals included)\n",
                method == hpipe::ReconMethod::gap_tv ? "GAP-TV" : "ADMM-TV", q.mean_psnr, q.mean_ssim,
                params.iterations, ms);
  }
  return 0;
} catch (const std::exception &e) {
  std::fprintf(stderr, "cassi_demo: %s\n", e.what());
  return 1;
}
