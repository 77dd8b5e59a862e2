// Iterative CASSI reconstruction: a total-variation denoiser, GAP-TV and ADMM-TV, and the image
// quality measures used to judge them (PSNR, SSIM).
//
// Shapes (NumPy order) as in hpipe/cassi.h: measurement y (B, H, W') (or (B, H', W) along height),
// mask (H, W) or (C, H, W), reconstructed cube x (B, C, H, W). Views are host or CUDA memory (see
// Backends); psnr, ssim and band_quality take host memory.
//
// tv_denoise   Chambolle's projection algorithm for min_u ||u - f||^2 / 2 + weight TV(u), applied to
//              every (batch, band) image on its own, exactly as skimage.restoration.
//              denoise_tv_chambolle(f[b], weight, max_num_iter=iterations, eps=0, channel_axis=0)
//              computes it: tau = 1/4, isotropic TV, forward differences that are 0 on the last
//              row/column. Like skimage, `iterations` n makes n - 1 dual steps (n = 1 returns f);
//              unlike skimage's default, there is no early stop (eps = 0).
//              vectorial = true: the band-coupled TV of Bresson & Chan (2008), sum_pixels
//              sqrt(sum_c |grad u_c|^2): the same steps, with one shared divisor per pixel,
//              1 + tau / weight * sqrt(sum_c |g_c|^2). It is one kernel for all its steps, which
//              sweeps the image once as a wavefront, each step's dual kept in a ring of a few rows
//              per band (docs/recon.md); per band, every step stays in cache.
// gap_tv       x_0 = A^T y, y1 = 0; then per iteration (Yuan, "Generalized alternating projection
//              based total variation minimization for compressive sensing", 2016):
//                yb = A x;  y1 <- y1 + (y - yb);  x <- x + lambda A^T((y1 - yb) / Phi);  x <- TV(x)
//              (accelerate = false: x <- x + lambda A^T((y - yb) / Phi)). Returns x.
// admm_tv      theta = A^T y, b = 0 (the same start as GAP-TV); then per iteration
//                x = (theta + b) + lambda A^T((y - A(theta + b)) / (Phi + gamma))
//                theta = TV(x - b);  b <- b - (x - theta).      Returns theta.
// Phi = sum_c m_c^2 displaced (hpipe::cassi_phi, zeros replaced by 1), so A A^T = diag(Phi).
// One iteration is one kernel: A x, the data step (residual, divide, adjoint, update) and every
// TV step are fused; the cube is read twice (for A x and for the data step) and written once.
//
// Backends: Options choose CPU or CUDA per kernel call; a view in CUDA memory runs on CUDA. A whole
// run (gap_tv, admm_tv, reconstruct) on CUDA reads views in CUDA memory in place and copies those
// in host memory to the device once (y, the mask); it computes Phi and keeps its state there (only
// its auxiliary array's zeros are copied) and writes x once, in place or copied back. With a
// callback and report_residual, each iteration also brings back A x for the residual (and a y in
// CUDA memory comes back once). The step functions take views where they are, host or CUDA memory.
//
// Accuracy: every operation is in the element type; in float32 the TV's per-pixel divisor is the
// hardware reciprocal estimate refined by one Newton step (a few ulp). Against a double-precision implementation of
// the same algorithm, float32 results after 20 iterations agree to better than 1e-5 relative in
// the residual ||y - A x|| at every iteration (measured 6e-7) and 0.05 dB in PSNR (measured
// < 1e-7 dB); see tests/test_recon.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hpipe/cassi.h"
#include "hpipe/device.h"
#include "hpipe/view.h"

namespace hpipe {

struct TvParams {
  double weight = 0.1;     // > 0: larger is smoother (skimage's `weight`)
  int iterations = 5;      // >= 1: Chambolle iterations (skimage's max_num_iter)
  bool vectorial = false;  // band-coupled TV (see above); slower: one sweep of the cube as a wavefront
};

enum class ReconMethod { gap_tv, admm_tv };

struct ReconParams {
  Dispersion dispersion;   // as for the forward model that made y
  int iterations = 20;     // >= 0 outer iterations (0 returns the start, A^T y)
  double lambda = 1.0;     // step of the data term, > 0
  double gamma = 0.01;     // ADMM only: >= 0, added to Phi
  bool accelerate = true;  // GAP only: the accelerated variant
  TvParams tv;
  // Whether a callback's IterationInfo carries the residual: one more A x per iteration (about a
  // tenth of a 28 x 256 x 256 iteration on the CPU; on CUDA also a copy of A x to the host). false:
  // it is NaN, for callers that use the callback for something else (the Python package's Ctrl-C).
  bool report_residual = true;
};

// Reported after every outer iteration when a callback is given. An exception the callback throws
// ends the run and leaves the call; x is then as it was (only the last iteration writes it), unless
// it comes after the last iteration.
struct IterationInfo {
  int iteration;    // 1-based
  int iterations;   // of the run
  double residual;  // ||y - A x_k||_2 over the whole measurement (all batch items), in double;
                    // NaN unless params.report_residual
};
using IterationCallback = std::function<void(const IterationInfo &)>;

// Per-band image quality of an estimate against the truth, both (C, H, W) with data in [0, 1].
struct BandQuality {
  std::vector<double> psnr;  // dB, per band
  std::vector<double> ssim;  // per band
  double mean_psnr = 0;      // mean of the per-band values (the usual CASSI figure)
  double mean_ssim = 0;
};

void tv_denoise(View<const float, 4> x, const TvParams &tv, View<float, 4> out, const Options &options = {});
void tv_denoise(View<const double, 4> x, const TvParams &tv, View<double, 4> out, const Options &options = {});
Array<float, 4> tv_denoise(View<const float, 4> x, const TvParams &tv, const Options &options = {});
Array<double, 4> tv_denoise(View<const double, 4> x, const TvParams &tv, const Options &options = {});

void gap_tv(View<const float, 3> y, const Mask<float> &mask, const ReconParams &params, View<float, 4> x,
            const IterationCallback &progress = {}, const Options &options = {});
void gap_tv(View<const double, 3> y, const Mask<double> &mask, const ReconParams &params, View<double, 4> x,
            const IterationCallback &progress = {}, const Options &options = {});
void admm_tv(View<const float, 3> y, const Mask<float> &mask, const ReconParams &params, View<float, 4> x,
             const IterationCallback &progress = {}, const Options &options = {});
void admm_tv(View<const double, 3> y, const Mask<double> &mask, const ReconParams &params, View<double, 4> x,
             const IterationCallback &progress = {}, const Options &options = {});

// Either method by name, allocating the cube (B, C, H, W) for `bands` bands in host memory.
Array<float, 4> reconstruct(ReconMethod method, View<const float, 3> y, const Mask<float> &mask, std::int64_t bands,
                            const ReconParams &params, const IterationCallback &progress = {},
                            const Options &options = {});
Array<double, 4> reconstruct(ReconMethod method, View<const double, 3> y, const Mask<double> &mask, std::int64_t bands,
                             const ReconParams &params, const IterationCallback &progress = {},
                             const Options &options = {});

// One iteration, for callers that drive the loop themselves (and the benchmarks): phi is
// cassi_phi(mask); start from x = A^T y, y1 = 0 (GAP) or theta = A^T y, b = 0 (ADMM).
// params.iterations is not used.
void gap_tv_step(View<const float, 4> x, View<const float, 3> y1, View<const float, 3> y, const Mask<float> &mask,
                 View<const float, 2> phi, const ReconParams &params, View<float, 4> x_next, View<float, 3> y1_next,
                 const Options &options = {});
void gap_tv_step(View<const double, 4> x, View<const double, 3> y1, View<const double, 3> y, const Mask<double> &mask,
                 View<const double, 2> phi, const ReconParams &params, View<double, 4> x_next, View<double, 3> y1_next,
                 const Options &options = {});
void admm_tv_step(View<const float, 4> theta, View<const float, 4> b, View<const float, 3> y, const Mask<float> &mask,
                  View<const float, 2> phi, const ReconParams &params, View<float, 4> theta_next, View<float, 4> b_next,
                  const Options &options = {});
void admm_tv_step(View<const double, 4> theta, View<const double, 4> b, View<const double, 3> y,
                  const Mask<double> &mask, View<const double, 2> phi, const ReconParams &params,
                  View<double, 4> theta_next, View<double, 4> b_next, const Options &options = {});

// PSNR = 10 log10(peak^2 / MSE) in dB (infinity when equal).
double psnr(View<const float, 2> estimate, View<const float, 2> truth, double peak = 1.0);
double psnr(View<const double, 2> estimate, View<const double, 2> truth, double peak = 1.0);
// SSIM of Wang et al. 2004: 11 x 11 Gaussian window (sigma 1.5, normalized), K1 = 0.01, K2 = 0.03,
// L = data_range; the mean over every window that lies inside the image (MATLAB's 'valid';
// skimage's gaussian_weights=True, use_sample_covariance=False gives the same). Needs H, W >= 11.
double ssim(View<const float, 2> estimate, View<const float, 2> truth, double data_range = 1.0);
double ssim(View<const double, 2> estimate, View<const double, 2> truth, double data_range = 1.0);
BandQuality band_quality(View<const float, 3> estimate, View<const float, 3> truth);
BandQuality band_quality(View<const double, 3> estimate, View<const double, 3> truth);

// "gap-tv" or "admm-tv" (as the CLI spells them); throws hpipe::Error naming the choices otherwise.
ReconMethod parse_recon_method(const std::string &name);
const char *to_string(ReconMethod method);

}  // namespace hpipe
