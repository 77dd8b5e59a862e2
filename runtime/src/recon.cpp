#include "hpipe/recon.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include <unistd.h>

#include "block_cache.h"
#include "call.h"
#include "cassi_checks.h"
#include "kernels.h"
#include "thread_pool.h"

namespace hpipe {

using detail::axis_code;
using detail::bind_mask;
using detail::Call;
using detail::check_dispersion;
using detail::check_shape;
using detail::fail;
using detail::shape_string;

namespace {

template <class T>
struct ReconKernels;

#define HPIPE_RECON_KERNELS(T, suffix)                                                          \
  template <>                                                                                   \
  struct ReconKernels<T> {                                                                      \
    static constexpr auto tv = HPIPE_KERNEL(hpipe_tv_chambolle_##suffix);                       \
    static constexpr auto tv_vectorial = HPIPE_KERNEL(hpipe_tv_vectorial_##suffix);             \
    static constexpr auto gap = HPIPE_KERNEL(hpipe_gap_tv_step_##suffix);                       \
    static constexpr auto gap_vectorial = HPIPE_KERNEL(hpipe_gap_tv_vectorial_step_##suffix);   \
    static constexpr auto admm = HPIPE_KERNEL(hpipe_admm_tv_step_##suffix);                     \
    static constexpr auto admm_vectorial = HPIPE_KERNEL(hpipe_admm_tv_vectorial_step_##suffix); \
  };
HPIPE_RECON_KERNELS(float, f32)
HPIPE_RECON_KERNELS(double, f64)
#undef HPIPE_RECON_KERNELS

using Shape3 = std::array<std::int64_t, 3>;
using Shape4 = std::array<std::int64_t, 4>;

// A parameter as a message shows it: "0.1", "1e-40", "inf".
std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

// The largest magnitude of a parameter the kernels take in T, with room for the few products
// they form with it.
template <class T>
constexpr double kMostParameter = std::numeric_limits<T>::max() / 1e3;
template <class T>
constexpr const char *kTypeName = sizeof(T) == 4 ? "float32" : "float64";

// The weight in the kernels' type T: a step of tau / weight must stay finite there (in float32,
// 1e-40 passed as a double and gave NaN everywhere).
template <class T>
void check_tv(const Call &call, const TvParams &tv) {
  if (!(tv.weight >= 1 / kMostParameter<T> && tv.weight <= kMostParameter<T>))
    call.fail("tv.weight", "expected a value from " + number(1 / kMostParameter<T>) + " to " +
                               number(kMostParameter<T>) + " (" + kTypeName<T> + "), got " + number(tv.weight));
  if (tv.iterations < 1) call.fail("tv.iterations", "expected at least 1, got " + std::to_string(tv.iterations));
}

// ||y - A x||_2 in double.
template <class T>
double residual_norm(View<const T, 3> y, View<const T, 4> x, const Mask<T> &mask, Dispersion d,
                     const Options &options) {
  const Array<T, 3> yb = cassi_forward(x, mask, d, options);
  double sum = 0;
  for (std::int64_t b = 0; b < y.shape(0); b++)
    for (std::int64_t h = 0; h < y.shape(1); h++)
      for (std::int64_t w = 0; w < y.shape(2); w++) {
        const double r = double(y(b, h, w)) - double(yb(b, h, w));
        sum += r * r;
      }
  return std::sqrt(sum);
}

// Rows of a strip of the vectorial TV's sweep (generators/recon.h). Each strip recomputes the
// (iterations - 1) rows each side of it, so strips are tall: on the CPU as many as give every
// worker thread a task, no taller than keeps a strip's last dual (2 values per pixel of every band,
// written by the sweep, read back by the output pass) within kTvVectorialStripBytes, so that the
// output pass finds it in cache, but at least kTvVectorialStripHaloRatio times the rows recomputed.
// On Zen 5 (1 MiB L2, 32 MiB L3), 28 bands x 256 float32: 32 rows ~8% faster than 128 (8 MiB);
// x 1024: 16 rows ~8% faster than 8 (docs/performance-notes.md). CUDA kernels take the steps form,
// which has no strips.
constexpr std::int64_t kTvVectorialStripBytes = std::int64_t(2) << 20;
constexpr std::int64_t kTvVectorialStripHaloRatio = 4;

std::int64_t tv_vectorial_strip_rows(const Shape4 &cube, std::size_t element_size, int iterations, bool cuda) {
  const std::int64_t height = cube[2];
  if (cuda) return height;
  const std::int64_t threads = num_threads();
  const std::int64_t strips_per_item = std::max<std::int64_t>(1, (threads + cube[0] - 1) / cube[0]);
  const std::int64_t row_bytes = 2 * cube[1] * cube[3] * static_cast<std::int64_t>(element_size);
  const std::int64_t rows = (height + strips_per_item - 1) / strips_per_item;
  const std::int64_t least = kTvVectorialStripHaloRatio * std::max(iterations - 1, 1);
  return std::max<std::int64_t>(1, std::min(rows, std::max(least, kTvVectorialStripBytes / row_bytes)));
}

// Rows of a strip of the per-band TV (generators/recon.h): each (band, item) image is cut into
// strips of equal height whose windows (the strip, n - 1 rows above, n - 2 below, and the frame)
// keep the task's planes (the gradient and the dual, 6; GAP-TV and ADMM-TV also hold their data
// step's image, 7) within 7/8 of a core's L2, or of 2 MiB where the L2 is smaller: an image that
// does not fit streams every step from L3 (512 x 512 float32 on a 2 MiB L2: 2.2x slower per
// pixel), but on a 512 KiB L2 the rows that windows of that size compute twice cost more than L3
// (W4 TV about 10% slower than in one window: docs/performance-notes.md). Strips stay at least 4
// windows' extra rows tall, so that the rows computed twice cost at most a quarter. CUDA kernels
// take one strip.
constexpr int kTvPlanes = 6, kTvIterationPlanes = 7;

std::int64_t tv_band_strip_rows(const Shape4 &cube, std::size_t element_size, int iterations, int planes, bool cuda) {
  const std::int64_t height = cube[2];
  if (cuda) return height;
  static const std::int64_t window_bytes = [] {
    const std::int64_t l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return std::max(l2, std::int64_t(2) << 20) / 8 * 7;
  }();
  const std::int64_t extra_rows = 2 * std::max(iterations - 1, 0) + 1;
  const std::int64_t row_bytes = planes * (cube[3] + 2) * static_cast<std::int64_t>(element_size);
  const std::int64_t rows = std::max(window_bytes / row_bytes - extra_rows, 4 * extra_rows);
  const std::int64_t strips = (height + rows - 1) / rows;
  return (height + strips - 1) / strips;
}

// The strips of a kernel's TV, vectorial or per band (whose task holds `band_planes` planes).
template <class T>
int strip_rows(Call &call, const Shape4 &cube, const TvParams &tv, int band_planes) {
  if (std::find(cube.begin(), cube.end(), 0) != cube.end()) return 1;  // an empty cube runs no kernel
  return static_cast<int>(tv.vectorial
                              ? tv_vectorial_strip_rows(cube, sizeof(T), tv.iterations, call.uses_cuda())
                              : tv_band_strip_rows(cube, sizeof(T), tv.iterations, band_planes, call.uses_cuda()));
}

template <class T>
void tv_impl(View<const T, 4> x, const TvParams &tv, View<T, 4> out, const Options &options) {
  Call call("tv_denoise", options);
  check_tv<T>(call, tv);
  check_shape(call, "out", out, x.shape(), " (the shape of x)");
  if (const std::int64_t images = detail::items_per_call(x, out); images < x.shape(0)) {
    detail::check_disjoint("tv_denoise", "out", out, "x", x);
    return detail::for_each_part(x.shape(0), images, [&](std::int64_t b, std::int64_t n) {
      tv_impl<T>(detail::batch_part(x, b, n), tv, detail::batch_part(out, b, n), options);
    });
  }
  auto xa = call.input("x", x);
  auto oa = call.output("out", out);
  const auto kernel = tv.vectorial ? ReconKernels<T>::tv_vectorial : ReconKernels<T>::tv;
  call.run(kernel, xa, static_cast<T>(tv.weight), tv.iterations, strip_rows<T>(call, x.shape(), tv, kTvPlanes), oa);
}

template <class T>
Array<T, 4> tv_allocated(View<const T, 4> x, const TvParams &tv, const Options &options) {
  detail::check_kernel_buffer<T>("tv_denoise", "x", detail::one_item(x.shape()));  // before the allocation
  Array<T, 4> out(x.shape());
  tv_impl<T>(x, tv, out.view(), options);
  return out;
}

// The checks of one step: the cube-shaped views have the shape of `cube` (the view `cube_name`),
// the measurement-shaped ones that of the measurement, phi (H', W'). Returns the mask bound to the
// cube.
template <class T>
View<const T, 3> check_step(const Call &call, ReconMethod method, const Shape4 &cube, const char *cube_name,
                            View<const T, 3> y, const Mask<T> &mask, View<const T, 2> phi, const ReconParams &p) {
  const Dispersion d = p.dispersion;
  check_dispersion(call, d);
  const Shape3 meas = detail::measurement_of(call.op(), "x", cube, d);
  check_shape(call, "y", y, meas, [&] { return detail::of_cube(cube, d) + " (" + cube_name + ")"; });
  check_shape(call, "phi", phi, std::array<std::int64_t, 2>{meas[1], meas[2]}, " (H', W') of y");
  if (!(p.lambda > 0 && p.lambda <= kMostParameter<T>))
    call.fail("lambda", "expected a value > 0, at most " + number(kMostParameter<T>) + " (" + kTypeName<T> + "), got " +
                            number(p.lambda));
  if (method == ReconMethod::admm_tv && !(p.gamma >= 0 && p.gamma <= kMostParameter<T>))
    call.fail("gamma", "expected a value from 0 to " + number(kMostParameter<T>) + " (" + kTypeName<T> + "), got " +
                           number(p.gamma));
  check_tv<T>(call, p.tv);
  return bind_mask(call, mask, cube[1], cube[2], cube[3]);
}

template <class T>
void gap_step_impl(View<const T, 4> x, View<const T, 3> y1, View<const T, 3> y, const Mask<T> &mask,
                   View<const T, 2> phi, const ReconParams &p, View<T, 4> x_next, View<T, 3> y1_next,
                   const Options &options) {
  Call call("gap_tv_step", options);
  const auto m = check_step<T>(call, ReconMethod::gap_tv, x.shape(), "x", y, mask, phi, p);
  check_shape(call, "y1", y1, y.shape(), " (the shape of y)");
  check_shape(call, "x_next", x_next, x.shape(), " (the shape of x)");
  check_shape(call, "y1_next", y1_next, y.shape(), " (the shape of y)");
  auto xa = call.input("x", x);
  auto y1a = call.input("y1", y1);
  auto ya = call.input("y", y);
  auto ma = call.input("mask", m);
  auto pa = call.input("phi", phi);
  auto xo = call.output("x_next", x_next);
  auto y1o = call.output("y1_next", y1_next);
  const Dispersion d = p.dispersion;
  const auto kernel = p.tv.vectorial ? ReconKernels<T>::gap_vectorial : ReconKernels<T>::gap;
  call.run(kernel, xa, y1a, ya, ma, pa, d.step, axis_code(d.axis), static_cast<T>(p.lambda),
           static_cast<T>(p.tv.weight), p.tv.iterations, strip_rows<T>(call, x.shape(), p.tv, kTvIterationPlanes),
           p.accelerate ? 1 : 0, xo, y1o);
}

template <class T>
void admm_step_impl(View<const T, 4> theta, View<const T, 4> b, View<const T, 3> y, const Mask<T> &mask,
                    View<const T, 2> phi, const ReconParams &p, View<T, 4> theta_next, View<T, 4> b_next,
                    const Options &options) {
  Call call("admm_tv_step", options);
  const auto m = check_step<T>(call, ReconMethod::admm_tv, theta.shape(), "theta", y, mask, phi, p);
  check_shape(call, "b", b, theta.shape(), " (the shape of theta)");
  check_shape(call, "theta_next", theta_next, theta.shape(), " (the shape of theta)");
  check_shape(call, "b_next", b_next, theta.shape(), " (the shape of theta)");
  auto ta = call.input("theta", theta);
  auto ba = call.input("b", b);
  auto ya = call.input("y", y);
  auto ma = call.input("mask", m);
  auto pa = call.input("phi", phi);
  auto to = call.output("theta_next", theta_next);
  auto bo = call.output("b_next", b_next);
  const Dispersion d = p.dispersion;
  const auto kernel = p.tv.vectorial ? ReconKernels<T>::admm_vectorial : ReconKernels<T>::admm;
  call.run(kernel, ta, ba, ya, ma, pa, d.step, axis_code(d.axis), static_cast<T>(p.lambda), static_cast<T>(p.tv.weight),
           p.tv.iterations, strip_rows<T>(call, theta.shape(), p.tv, kTvIterationPlanes), static_cast<T>(p.gamma), to,
           bo);
}

// Everything a whole run checks before any work; returns whether the run's kernels are CUDA's.
template <class T>
bool prepare(const char *op, ReconMethod method, View<const T, 3> y, const Mask<T> &mask, const ReconParams &p,
             View<T, 4> x, const Options &options) {
  Call call(op, options);
  // Each view's extents, strides and span as a kernel takes them, before any copy of it is made
  // (on CUDA, a y in host memory goes to the device before any kernel sees it).
  call.input("y", y);
  call.input("mask", mask.view());
  call.output("x", x);
  call.check_views();  // here, so that its errors name this op, not the first kernel's
  const bool cuda = call.uses_cuda();
  // x is written only by the last iteration's kernel: check it against the inputs before any work.
  detail::check_disjoint(op, "x", x, "y", y);
  detail::check_disjoint(op, "x", x, "mask", mask.view());
  if (p.iterations < 0) call.fail("iterations", "expected at least 0, got " + std::to_string(p.iterations));
  check_dispersion(call, p.dispersion);
  const Shape3 meas = detail::measurement_of(op, "x", x.shape(), p.dispersion);
  // Phi is made after these checks, in the memory the run's kernels read: here only its shape.
  check_step<T>(call, method, x.shape(), "the output x", y, mask, View<const T, 2>(nullptr, {meas[1], meas[2]}), p);
  return cuda;
}

// What an iteration reads besides its state: the measurement, the mask and Phi.
template <class T>
struct StepInputs {
  View<const T, 3> y;
  Mask<T> mask;
  View<const T, 2> phi;
};

// The state of an iteration, double-buffered: x (or theta) and the auxiliary array (GAP's y1,
// ADMM's b), each as the current and the next.
template <class T, int AuxRank>
struct IterationState {
  View<T, 4> cur, next;
  View<T, AuxRank> aux, aux_next;
};

// The iteration GAP-TV and ADMM-TV share: x_0 = A^T y and an auxiliary state that starts at 0
// (GAP's y1, shaped like y; ADMM's b, shaped like x), then step(inputs, x, aux, x', aux'), double-
// buffered, the last x' written straight into x. On CUDA the inputs in host memory and aux's zeros
// are copied to the device once (those in CUDA memory are read in place) and the rest of the state
// is allocated there, so that the steps read and write device memory (on host arrays every step
// copied its cubes both ways, several times its kernel's time).
template <class T, int AuxRank, class Step>
void iterate(const char *op, ReconMethod method, View<const T, 3> y, const Mask<T> &mask, const ReconParams &p,
             View<T, 4> x, const std::array<std::int64_t, AuxRank> &aux_shape, Step step,
             const IterationCallback &progress, const Options &options) {
  const bool cuda = prepare<T>(op, method, y, mask, p, x, options);
  const Dispersion d = p.dispersion;
  if (p.iterations == 0) return cassi_adjoint(y, mask, d, x, options);  // x_0 = A^T y
  // The residual reads y on the host: a y in CUDA memory is copied here once.
  std::optional<detail::ScratchArray<T, 3>> y_on_host;
  if (progress && p.report_residual && y.memory() == Memory::cuda) {
    y_on_host.emplace(y.shape());
    detail::copy_to_host(op, y, y_on_host->view(), options);
  }
  const View<const T, 3> y_host = y_on_host ? View<const T, 3>(y_on_host->view()) : y;
  const auto run = [&](const StepInputs<T> &in, IterationState<T, AuxRank> s) {
    cassi_adjoint(in.y, in.mask, d, s.cur, options);  // x_0 = A^T y
    for (int k = 1; k <= p.iterations; k++) {
      const View<T, 4> out = k == p.iterations ? x : s.next;
      step(in, s.cur, s.aux, out, s.aux_next);
      if (progress)
        progress({k, p.iterations,
                  p.report_residual ? residual_norm<T>(y_host, out, in.mask, d, options)
                                    : std::numeric_limits<double>::quiet_NaN()});
      std::swap(s.cur, s.next);
      std::swap(s.aux, s.aux_next);
    }
  };
  const std::array<std::int64_t, 2> phi_shape{y.shape(1), y.shape(2)};
  if (!cuda) {
    // From the block cache: a run after another reuses mapped memory (fresh pages fault).
    const detail::ScratchArray<T, 2> phi(phi_shape);
    cassi_phi(mask, x.shape(1), d, phi.view(), options);
    const detail::ScratchArray<T, 4> cur(x.shape()), next(x.shape());
    const detail::ScratchArray<T, AuxRank> aux(aux_shape), aux_next(aux_shape);
    std::fill_n(aux.data(), aux.view().size(), T(0));  // aux starts at 0
    return run({y, mask, phi.view()}, {cur.view(), next.view(), aux.view(), aux_next.view()});
  }
  using detail::DeviceArray;
  std::optional<DeviceArray> y_copy, mask_copy;
  View<const T, 3> y_device = y;
  if (y.memory() == Memory::host) {
    y_copy.emplace(op, y, options);
    y_device = y_copy->view<const T, 3>(y.shape());
  }
  Mask<T> device_mask = mask;
  if (const View<const T, 3> m = mask.view(); m.memory() == Memory::host) {  // as given: shared (H, W) or per band
    const Shape3 m_shape = m.shape();
    if (mask.per_band()) {
      mask_copy.emplace(op, m, options);
      device_mask = Mask<T>(mask_copy->view<const T, 3>(m_shape));
    } else {
      mask_copy.emplace(op, View<const T, 2>(m.data(), {m_shape[1], m_shape[2]}, {m.stride(1), m.stride(2)}), options);
      device_mask = Mask<T>(mask_copy->view<const T, 2>({m_shape[1], m_shape[2]}));
    }
  }
  const DeviceArray phi(op, halide_type_of<T>(), phi_shape, options);
  cassi_phi(device_mask, x.shape(1), d, phi.view<T, 2>(phi_shape), options);
  // Only aux's first values are read before they are written: zeros.
  const detail::ScratchArray<T, AuxRank> zeros(aux_shape);
  std::fill_n(zeros.data(), zeros.view().size(), T(0));
  const DeviceArray aux(op, View<const T, AuxRank>(zeros.view()), options);
  const DeviceArray cur(op, halide_type_of<T>(), x.shape(), options), next(op, halide_type_of<T>(), x.shape(), options);
  const DeviceArray aux_next(op, halide_type_of<T>(), aux_shape, options);
  run({y_device, device_mask, phi.view<const T, 2>(phi_shape)},
      {cur.view<T, 4>(x.shape()), next.view<T, 4>(x.shape()), aux.view<T, AuxRank>(aux_shape),
       aux_next.view<T, AuxRank>(aux_shape)});
}

template <class T>
void gap_impl(View<const T, 3> y, const Mask<T> &mask, const ReconParams &p, View<T, 4> x,
              const IterationCallback &progress, const Options &options) {
  auto step = [&](const StepInputs<T> &in, View<const T, 4> cur, View<const T, 3> y1, View<T, 4> out,
                  View<T, 3> y1_next) { gap_step_impl<T>(cur, y1, in.y, in.mask, in.phi, p, out, y1_next, options); };
  iterate<T, 3>("gap_tv", ReconMethod::gap_tv, y, mask, p, x, y.shape(), step, progress, options);
}

template <class T>
void admm_impl(View<const T, 3> y, const Mask<T> &mask, const ReconParams &p, View<T, 4> x,
               const IterationCallback &progress, const Options &options) {
  auto step = [&](const StepInputs<T> &in, View<const T, 4> theta, View<const T, 4> b, View<T, 4> out,
                  View<T, 4> b_next) { admm_step_impl<T>(theta, b, in.y, in.mask, in.phi, p, out, b_next, options); };
  iterate<T, 4>("admm_tv", ReconMethod::admm_tv, y, mask, p, x, x.shape(), step, progress, options);
}

template <class T>
Array<T, 4> reconstruct_impl(ReconMethod method, View<const T, 3> y, const Mask<T> &mask, std::int64_t bands,
                             const ReconParams &p, const IterationCallback &progress, const Options &options) {
  const auto cube = detail::cube_behind(to_string(method), y, bands, p.dispersion);
  detail::check_kernel_buffer<T>(to_string(method), "x", cube);  // a reconstruction is one call's batch
  Array<T, 4> x(cube);
  if (method == ReconMethod::gap_tv) {
    gap_impl<T>(y, mask, p, x.view(), progress, options);
  } else {
    admm_impl<T>(y, mask, p, x.view(), progress, options);
  }
  return x;
}

// ---- quality ----

template <class V>
void check_same_shape(const char *op, const V &estimate, const V &truth) {
  detail::check_extents(op, "estimate", estimate);
  if (estimate.memory() != Memory::host) fail(op, "estimate", "must be host memory, got CUDA memory");
  if (truth.memory() != Memory::host) fail(op, "truth", "must be host memory, got CUDA memory");
  if (estimate.shape() != truth.shape())
    fail(op, "estimate",
         "expected the shape of truth " + shape_string(truth.shape()) + ", got " + shape_string(estimate.shape()));
}

template <class T>
double psnr_impl(View<const T, 2> a, View<const T, 2> t, double peak) {
  check_same_shape("psnr", a, t);
  if (!(peak > 0)) fail("psnr", "peak", "expected a value > 0, got " + std::to_string(peak));
  double sum = 0;
  for (std::int64_t h = 0; h < a.shape(0); h++)
    for (std::int64_t w = 0; w < a.shape(1); w++) {
      const double e = double(a(h, w)) - double(t(h, w));
      sum += e * e;
    }
  const double mse = sum / double(a.size());
  return mse == 0 ? std::numeric_limits<double>::infinity() : 10 * std::log10(peak * peak / mse);
}

// The 11-tap Gaussian of sigma 1.5, normalized to sum 1.
std::array<double, 11> gaussian_window() {
  std::array<double, 11> g{};
  double total = 0;
  for (int i = 0; i < 11; i++) total += g[i] = std::exp(-0.5 * (i - 5) * (i - 5) / (1.5 * 1.5));
  for (double &v : g) v /= total;
  return g;
}

template <class T>
double ssim_impl(View<const T, 2> a, View<const T, 2> t, double data_range) {
  check_same_shape("ssim", a, t);
  if (!(data_range > 0)) fail("ssim", "data_range", "expected a value > 0, got " + std::to_string(data_range));
  const std::int64_t H = a.shape(0), W = a.shape(1);
  if (H < 11 || W < 11)
    fail("ssim", "estimate", "expected an image of at least 11 x 11 (the window), got " + shape_string(a.shape()));
  const auto g = gaussian_window();
  const std::int64_t Wv = W - 10, Hv = H - 10;
  // The five moments x, y, x^2, y^2, x y filtered along rows, as planes (H, Wv), then along columns
  // a row at a time; every inner loop runs along w over contiguous doubles, which the compiler
  // vectorizes (28 bands of 256 x 256 from Python: 77 -> 44 ms against five moments per pixel).
  constexpr int kMoments = 5;
  std::vector<double> x(static_cast<std::size_t>(W)), y(x.size());
  std::vector<double> rows(static_cast<std::size_t>(kMoments * H * Wv), 0.0);
  const auto plane = [&](int k, std::int64_t h) { return rows.data() + (k * H + h) * Wv; };
  for (std::int64_t h = 0; h < H; h++) {
    for (std::int64_t w = 0; w < W; w++) x[w] = a(h, w), y[w] = t(h, w);
    double *mx = plane(0, h), *my = plane(1, h), *mxx = plane(2, h), *myy = plane(3, h), *mxy = plane(4, h);
    for (int i = 0; i < 11; i++)
      for (std::int64_t w = 0; w < Wv; w++) {
        const double xv = x[w + i], yv = y[w + i], gi = g[i];
        mx[w] += gi * xv, my[w] += gi * yv, mxx[w] += gi * xv * xv, myy[w] += gi * yv * yv, mxy[w] += gi * xv * yv;
      }
  }
  const double c1 = (0.01 * data_range) * (0.01 * data_range), c2 = (0.03 * data_range) * (0.03 * data_range);
  std::vector<double> m(static_cast<std::size_t>(kMoments * Wv));
  double total = 0;
  for (std::int64_t h = 0; h < Hv; h++) {
    std::fill(m.begin(), m.end(), 0.0);
    for (int i = 0; i < 11; i++)
      for (int k = 0; k < kMoments; k++) {
        const double *from = plane(k, h + i);
        double *into = m.data() + k * Wv;
        for (std::int64_t w = 0; w < Wv; w++) into[w] += g[i] * from[w];
      }
    const double *mx = m.data(), *my = mx + Wv, *mxx = my + Wv, *myy = mxx + Wv, *mxy = myy + Wv;
    for (std::int64_t w = 0; w < Wv; w++) {
      const double vx = mxx[w] - mx[w] * mx[w], vy = myy[w] - my[w] * my[w], cxy = mxy[w] - mx[w] * my[w];
      total += ((2 * mx[w] * my[w] + c1) * (2 * cxy + c2)) / ((mx[w] * mx[w] + my[w] * my[w] + c1) * (vx + vy + c2));
    }
  }
  return total / double(Hv * Wv);
}

// Band c of a (C, H, W) view.
template <class T>
View<const T, 2> band_of(const View<const T, 3> &v, std::int64_t c) {
  return View<const T, 2>(v.data() + c * v.stride(0), {v.shape(1), v.shape(2)}, {v.stride(1), v.stride(2)});
}

template <class T>
BandQuality band_quality_impl(View<const T, 3> a, View<const T, 3> t) {
  check_same_shape("band_quality", a, t);
  const std::int64_t bands = a.shape(0);
  BandQuality q;
  q.psnr.resize(static_cast<std::size_t>(bands));
  q.ssim.resize(static_cast<std::size_t>(bands));
  // The bands on hpipe's worker threads (28 bands of 256 x 256: about 1.8x faster on two cores).
  struct Work {
    View<const T, 3> a, t;
    BandQuality *q;
    std::exception_ptr failure;  // the first band's to fail, rethrown here
    std::mutex mutex;
  } work{a, t, &q, nullptr, {}};
  const halide_task_t one_band = [](void *, int c, std::uint8_t *closure) {
    Work &w = *reinterpret_cast<Work *>(closure);
    try {
      w.q->psnr[c] = psnr_impl<T>(band_of(w.a, c), band_of(w.t, c), 1.0);
      w.q->ssim[c] = ssim_impl<T>(band_of(w.a, c), band_of(w.t, c), 1.0);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(w.mutex);
      if (!w.failure) w.failure = std::current_exception();
    }
    return 0;
  };
  detail::run_tasks(one_band, static_cast<int>(bands), &work, num_threads());
  if (work.failure) std::rethrow_exception(work.failure);
  for (std::int64_t c = 0; c < bands; c++) {
    q.mean_psnr += q.psnr[c] / double(bands);
    q.mean_ssim += q.ssim[c] / double(bands);
  }
  return q;
}

}  // namespace

ReconMethod parse_recon_method(const std::string &name) {
  if (name == "gap-tv") return ReconMethod::gap_tv;
  if (name == "admm-tv") return ReconMethod::admm_tv;
  fail("parse_recon_method", "method", "expected gap-tv or admm-tv, got '" + name + "'");
}

const char *to_string(ReconMethod method) { return method == ReconMethod::admm_tv ? "admm_tv" : "gap_tv"; }

// The public overloads: float32 and float64 of each function.
void tv_denoise(View<const float, 4> x, const TvParams &tv, View<float, 4> out, const Options &o) {
  tv_impl<float>(x, tv, out, o);
}
void tv_denoise(View<const double, 4> x, const TvParams &tv, View<double, 4> out, const Options &o) {
  tv_impl<double>(x, tv, out, o);
}
Array<float, 4> tv_denoise(View<const float, 4> x, const TvParams &tv, const Options &o) {
  return tv_allocated<float>(x, tv, o);
}
Array<double, 4> tv_denoise(View<const double, 4> x, const TvParams &tv, const Options &o) {
  return tv_allocated<double>(x, tv, o);
}
void gap_tv(View<const float, 3> y, const Mask<float> &mask, const ReconParams &p, View<float, 4> x,
            const IterationCallback &progress, const Options &o) {
  gap_impl<float>(y, mask, p, x, progress, o);
}
void gap_tv(View<const double, 3> y, const Mask<double> &mask, const ReconParams &p, View<double, 4> x,
            const IterationCallback &progress, const Options &o) {
  gap_impl<double>(y, mask, p, x, progress, o);
}
void admm_tv(View<const float, 3> y, const Mask<float> &mask, const ReconParams &p, View<float, 4> x,
             const IterationCallback &progress, const Options &o) {
  admm_impl<float>(y, mask, p, x, progress, o);
}
void admm_tv(View<const double, 3> y, const Mask<double> &mask, const ReconParams &p, View<double, 4> x,
             const IterationCallback &progress, const Options &o) {
  admm_impl<double>(y, mask, p, x, progress, o);
}
Array<float, 4> reconstruct(ReconMethod method, View<const float, 3> y, const Mask<float> &mask, std::int64_t bands,
                            const ReconParams &p, const IterationCallback &progress, const Options &o) {
  return reconstruct_impl<float>(method, y, mask, bands, p, progress, o);
}
Array<double, 4> reconstruct(ReconMethod method, View<const double, 3> y, const Mask<double> &mask, std::int64_t bands,
                             const ReconParams &p, const IterationCallback &progress, const Options &o) {
  return reconstruct_impl<double>(method, y, mask, bands, p, progress, o);
}
void gap_tv_step(View<const float, 4> x, View<const float, 3> y1, View<const float, 3> y, const Mask<float> &mask,
                 View<const float, 2> phi, const ReconParams &p, View<float, 4> x_next, View<float, 3> y1_next,
                 const Options &o) {
  gap_step_impl<float>(x, y1, y, mask, phi, p, x_next, y1_next, o);
}
void gap_tv_step(View<const double, 4> x, View<const double, 3> y1, View<const double, 3> y, const Mask<double> &mask,
                 View<const double, 2> phi, const ReconParams &p, View<double, 4> x_next, View<double, 3> y1_next,
                 const Options &o) {
  gap_step_impl<double>(x, y1, y, mask, phi, p, x_next, y1_next, o);
}
void admm_tv_step(View<const float, 4> theta, View<const float, 4> b, View<const float, 3> y, const Mask<float> &mask,
                  View<const float, 2> phi, const ReconParams &p, View<float, 4> theta_next, View<float, 4> b_next,
                  const Options &o) {
  admm_step_impl<float>(theta, b, y, mask, phi, p, theta_next, b_next, o);
}
void admm_tv_step(View<const double, 4> theta, View<const double, 4> b, View<const double, 3> y,
                  const Mask<double> &mask, View<const double, 2> phi, const ReconParams &p, View<double, 4> theta_next,
                  View<double, 4> b_next, const Options &o) {
  admm_step_impl<double>(theta, b, y, mask, phi, p, theta_next, b_next, o);
}
double psnr(View<const float, 2> a, View<const float, 2> t, double peak) { return psnr_impl<float>(a, t, peak); }
double psnr(View<const double, 2> a, View<const double, 2> t, double peak) { return psnr_impl<double>(a, t, peak); }
double ssim(View<const float, 2> a, View<const float, 2> t, double range) { return ssim_impl<float>(a, t, range); }
double ssim(View<const double, 2> a, View<const double, 2> t, double range) { return ssim_impl<double>(a, t, range); }
BandQuality band_quality(View<const float, 3> a, View<const float, 3> t) { return band_quality_impl<float>(a, t); }
BandQuality band_quality(View<const double, 3> a, View<const double, 3> t) { return band_quality_impl<double>(a, t); }

}  // namespace hpipe
