// Reconstruction family: TV denoiser, GAP-TV and ADMM-TV against the double-precision reference,
// PSNR and SSIM against known values, the demo-quality check on the synthetic scene, bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <sstream>

#include "cuda_memory.h"
#include "reference/recon_reference.h"
#include "test_util.h"

namespace hpipe::test {
namespace {

using reference::CassiProblem;

struct TvCase {
  std::int64_t B, C, H, W;
  double weight;
  int iterations;
  bool vectorial = false;
};

const std::vector<TvCase> kTvCases = {
    {1, 1, 1, 1, 0.1, 5},       // a single pixel: nothing to smooth
    {1, 1, 5, 7, 0.1, 1},       // one iteration returns the input
    {2, 3, 7, 5, 0.1, 2},       // one dual step
    {1, 2, 1, 19, 0.2, 5},      // H = 1
    {1, 2, 23, 1, 0.2, 5},      // W = 1
    {1, 3, 17, 33, 0.05, 13},   // odd sizes, more steps than a vector
    {2, 2, 31, 70, 0.3, 6},     // rows longer than several vectors, with a tail
    {1, 2, 100, 4096, 0.1, 5},  // rows too wide for a core's L2: strips of rows, each from a window of its own
    {1, 1, 50, 4096, 0.1, 2},   // strips with one dual step (windows one row beyond)
    // vectorial (band-coupled)
    {1, 3, 5, 7, 0.1, 1, true},        // one iteration returns the input (no dual step)
    {2, 3, 6, 9, 0.1, 2, true},        // the first step alone (p = 0 known, the dual not read)
    {1, 1, 9, 11, 0.1, 4, true},       // one band: the same as per band
    {2, 5, 13, 21, 0.1, 5, true},      // a batch: coupled within each item only
    {1, 3, 1, 19, 0.2, 3, true},       // H = 1
    {1, 4, 17, 35, 0.05, 9, true},     // odd sizes
    {1, 2, 23, 1, 0.2, 4, true},       // W = 1
    {2, 3, 19, 37, 0.1, 6, true},      // a batch with a row tail; the sweep's state reuses cached scratch
    {2, 4, 29, 23, 0.1, 12, true},     // 11 dual steps: the rings (one slot of the dual) wrap many times
    {1, 32, 100, 1024, 0.1, 3, true},  // strips of 8 rows (float: the state's budget; double: 4x the rows
                                       // recomputed), a short last one
};

template <class T>
void check_tv(const TvCase &tc, Device device, std::uint32_t seed) {
  std::ostringstream what;
  what << "B=" << tc.B << " C=" << tc.C << " H=" << tc.H << " W=" << tc.W << " weight=" << tc.weight
       << " iterations=" << tc.iterations << (tc.vectorial ? " vectorial" : "");
  SCOPED_TRACE(what.str());
  const auto x = random_array<T, 4>({tc.B, tc.C, tc.H, tc.W}, seed);
  auto out = poisoned<T, 4>(x.shape());
  tv_denoise(x.view(), TvParams{tc.weight, tc.iterations, tc.vectorial}, out.view(), {device});
  const CassiProblem p{tc.B, tc.C, tc.H, tc.W, 0};
  const auto expected = reference::tv_chambolle(p, to_doubles(x), tc.weight, tc.iterations, tc.vectorial);
  EXPECT_TRUE(all_near(to_doubles(out), expected, tolerance::tv<T>(tc.iterations)));
  EXPECT_EQ(to_doubles(x), to_doubles(random_array<T, 4>(x.shape(), seed)));  // input untouched
}

template <class T>
class ReconTyped : public ::testing::Test {};
using ElementTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ReconTyped, ElementTypes);

TYPED_TEST(ReconTyped, TvMatchesSkimageAlgorithmOnCpu) {
  std::uint32_t seed = 40;
  for (const auto &tc : kTvCases) check_tv<TypeParam>(tc, Device::cpu, seed++);
}

TYPED_TEST(ReconTyped, TvMatchesSkimageAlgorithmOnCuda) {
  if (!cuda_available()) GTEST_SKIP() << "no usable GPU: " << cuda_unavailable_reason();
  std::uint32_t seed = 80;
  for (const auto &tc : kTvCases) check_tv<TypeParam>(tc, Device::cuda, seed++);
}

// The vectorial TV cuts an image into one strip per worker thread: whatever the count (strips
// shorter than the rows they recompute each side, a short last one, one row each), the result is
// the whole image's.
TYPED_TEST(ReconTyped, VectorialTvStripsGiveTheWholeImagesResult) {
  const int threads = num_threads();
  std::uint32_t seed = 120;
  for (const int count : {1, 3, 7, 23}) {
    SCOPED_TRACE("threads=" + std::to_string(count));
    set_num_threads(count);
    check_tv<TypeParam>({1, 3, 23, 17, 0.1, 5, true}, Device::cpu, seed++);
  }
  set_num_threads(threads);
}

TEST(ReconTv, ConstantImageIsAFixedPoint) {
  Array<float, 4> x({1, 2, 9, 12});
  for (std::int64_t i = 0; i < x.size(); i++) x.data()[i] = 0.375f;
  const auto out = tv_denoise(x.view(), TvParams{0.5, 9}, {Device::cpu});
  EXPECT_TRUE(all_near(to_doubles(out), to_doubles(x), tolerance::kExact));
}

// ---- GAP-TV and ADMM-TV ----

// A small synthetic scene: 8 bands of 32 x 37 (odd width), step 2, the synthetic mask.
struct SmallScene {
  CassiProblem p{1, 8, 32, 37, 2};
  Array<float, 3> truth = synth_scene(8, 32, 37);
  Array<float, 2> mask = synth_mask(32, 37, 3);
};

template <class T>
Array<T, 3> measurement_of(const CassiProblem &p, const std::vector<double> &y) {
  Array<T, 3> out({p.B, p.Hm(), p.Wm()});
  for (std::int64_t i = 0; i < out.size(); i++) out.data()[i] = static_cast<T>(y[i]);
  return out;
}
template <class T, int R>
Array<T, R> converted(const Array<float, R> &a) {
  Array<T, R> out(a.shape());
  for (std::int64_t i = 0; i < a.size(); i++) out.data()[i] = static_cast<T>(a.data()[i]);
  return out;
}

// Per-iteration residuals and the final PSNR against the double reference (tolerance::recon_residual,
// tolerance::kReconPsnrAgreementDb).
template <class T>
void check_method(ReconMethod method, const reference::ReconSettings &s, Device device) {
  SCOPED_TRACE(to_string(method));
  const SmallScene scene;
  const CassiProblem &p = scene.p;
  const auto m = to_doubles(scene.mask);
  const auto truth = to_doubles(scene.truth);
  const auto y_ref = reference::cassi_forward(p, truth, m);
  const auto y = measurement_of<T>(p, y_ref);
  const auto mask = converted<T>(scene.mask);

  ReconParams params;
  params.dispersion = {p.step, Axis::width};
  params.iterations = s.iterations;
  params.lambda = s.lambda;
  params.gamma = s.gamma;
  params.accelerate = s.accelerate;
  params.tv = {s.tv_weight, s.tv_iterations, s.vectorial};
  std::vector<double> residuals;
  auto x = poisoned<T, 4>({p.B, p.C, p.H, p.W});
  const auto progress = [&](const IterationInfo &info) {
    EXPECT_EQ(info.iteration, int(residuals.size()) + 1);
    EXPECT_EQ(info.iterations, s.iterations);
    residuals.push_back(info.residual);
  };
  if (method == ReconMethod::gap_tv) {
    gap_tv(y.view(), Mask<T>(mask.view()), params, x.view(), progress, {device});
  } else {
    admm_tv(y.view(), Mask<T>(mask.view()), params, x.view(), progress, {device});
  }
  const auto expected = method == ReconMethod::gap_tv ? reference::gap_tv(p, to_doubles(y), to_doubles(mask), s)
                                                      : reference::admm_tv(p, to_doubles(y), to_doubles(mask), s);
  ASSERT_EQ(residuals.size(), expected.residuals.size());
  double worst = 0;
  for (std::size_t k = 0; k < residuals.size(); k++) {
    worst = std::max(worst, std::abs(residuals[k] - expected.residuals[k]) / expected.residuals[k]);
    EXPECT_TRUE(all_near({residuals[k]}, {expected.residuals[k]}, tolerance::recon_residual<T>()))
        << "iteration " << k + 1;
  }
  const double psnr_hpipe = reference::psnr(to_doubles(x), truth), psnr_ref = reference::psnr(expected.x, truth);
  std::cout << "[ " << to_string(method) << (s.vectorial ? " vectorial" : "") << " "
            << (std::is_same_v<T, float> ? "f32" : "f64") << " ] " << s.iterations << " iterations: PSNR " << psnr_hpipe
            << " dB (reference " << psnr_ref << " dB, difference " << std::abs(psnr_hpipe - psnr_ref)
            << " dB), worst relative residual difference " << worst << "\n";
  EXPECT_NEAR(psnr_hpipe, psnr_ref, tolerance::kReconPsnrAgreementDb);
  // Inputs are never modified.
  EXPECT_EQ(to_doubles(y), to_doubles(measurement_of<T>(p, y_ref)));
  EXPECT_EQ(to_doubles(mask), to_doubles(converted<T>(scene.mask)));
  // The result improves on the start, A^T y.
  EXPECT_LT(
      expected.residuals.back(),
      reference::norm2(to_doubles(y), reference::cassi_forward(p, reference::cassi_adjoint(p, to_doubles(y), m), m)));
}

TYPED_TEST(ReconTyped, GapTvMatchesReferenceOnCpu) {
  check_method<TypeParam>(ReconMethod::gap_tv, {}, Device::cpu);
  reference::ReconSettings plain;
  plain.accelerate = false;
  plain.iterations = 6;
  plain.lambda = 0.8;
  check_method<TypeParam>(ReconMethod::gap_tv, plain, Device::cpu);
}

TYPED_TEST(ReconTyped, AdmmTvMatchesReferenceOnCpu) {
  check_method<TypeParam>(ReconMethod::admm_tv, {}, Device::cpu);
  reference::ReconSettings other;
  other.iterations = 7;
  other.gamma = 0.5;
  other.tv_weight = 0.02;
  other.tv_iterations = 3;
  check_method<TypeParam>(ReconMethod::admm_tv, other, Device::cpu);
}

TYPED_TEST(ReconTyped, VectorialTvInGapAndAdmmMatchesReference) {
  reference::ReconSettings s;
  s.vectorial = true;
  s.iterations = 8;
  check_method<TypeParam>(ReconMethod::gap_tv, s, Device::cpu);
  check_method<TypeParam>(ReconMethod::admm_tv, s, Device::cpu);
}

TYPED_TEST(ReconTyped, GapAndAdmmMatchReferenceOnCuda) {
  if (!cuda_available()) GTEST_SKIP() << "no usable GPU: " << cuda_unavailable_reason();
  check_method<TypeParam>(ReconMethod::gap_tv, {}, Device::cuda);
  check_method<TypeParam>(ReconMethod::admm_tv, {}, Device::cuda);
  reference::ReconSettings vectorial;
  vectorial.vectorial = true;
  vectorial.iterations = 8;
  check_method<TypeParam>(ReconMethod::gap_tv, vectorial, Device::cuda);
  check_method<TypeParam>(ReconMethod::admm_tv, vectorial, Device::cuda);
}

// A run given CUDA memory (y, a per-band mask and x on the device) computes what the same run on
// host arrays does on CUDA, bit for bit, residuals too.
TYPED_TEST(ReconTyped, RunsOnCudaMemoryMatchHostArraysOnCuda) {
  using T = TypeParam;
  if (!cuda_available()) GTEST_SKIP() << "no usable GPU: " << cuda_unavailable_reason();
  const SmallScene scene;
  const CassiProblem &p = scene.p;
  const auto y = measurement_of<T>(p, reference::cassi_forward(p, to_doubles(scene.truth), to_doubles(scene.mask)));
  Array<T, 3> mask({p.C, p.H, p.W});
  for (std::int64_t c = 0; c < p.C; c++)  // per band: each band's mask the shared one scaled
    for (std::int64_t i = 0; i < p.H * p.W; i++)
      mask.data()[c * p.H * p.W + i] = static_cast<T>(scene.mask.data()[i] * (1.0 - 0.05 * double(c)));
  DeviceMemory y_dev(y.data(), y.size() * sizeof(T)), mask_dev(mask.data(), mask.size() * sizeof(T));
  DeviceMemory x_dev(nullptr, p.B * p.C * p.H * p.W * sizeof(T));
  ReconParams params;
  params.dispersion = {p.step, Axis::width};
  params.iterations = 6;
  for (ReconMethod method : {ReconMethod::gap_tv, ReconMethod::admm_tv}) {
    SCOPED_TRACE(to_string(method));
    const auto run = [&](View<const T, 3> y_view, const Mask<T> &m, View<T, 4> x, std::vector<double> &residuals) {
      const auto progress = [&](const IterationInfo &info) { residuals.push_back(info.residual); };
      if (method == ReconMethod::gap_tv) {
        gap_tv(y_view, m, params, x, progress, {Device::cuda});
      } else {
        admm_tv(y_view, m, params, x, progress, {Device::cuda});
      }
    };
    auto on_host = poisoned<T, 4>({p.B, p.C, p.H, p.W});
    std::vector<double> host_residuals, device_residuals;
    run(y.view(), Mask<T>(mask.view()), on_host.view(), host_residuals);
    run(View<const T, 3>(static_cast<const T *>(y_dev.get()), y.shape(), Memory::cuda),
        Mask<T>(View<const T, 3>(static_cast<const T *>(mask_dev.get()), mask.shape(), Memory::cuda)),
        View<T, 4>(static_cast<T *>(x_dev.get()), on_host.shape(), Memory::cuda), device_residuals);
    synchronize_cuda();
    auto on_device = poisoned<T, 4>(on_host.shape());
    x_dev.copy_to(on_device.data(), on_device.size() * sizeof(T));
    EXPECT_EQ(to_doubles(on_device), to_doubles(on_host));
    EXPECT_EQ(device_residuals, host_residuals);
    ASSERT_EQ(host_residuals.size(), 6u);
  }
}

// GAP-TV and ADMM-TV in double on random scenes of `p` with `mask`: the result after `iterations`,
// element by element.
template <int MaskRank>
void check_iterations(const CassiProblem &p, const Array<double, MaskRank> &mask, int iterations, std::uint32_t seed) {
  const auto truth = random_array<double, 4>({p.B, p.C, p.H, p.W}, seed);
  const auto y = measurement_of<double>(p, reference::cassi_forward(p, to_doubles(truth), to_doubles(mask)));
  reference::ReconSettings s;
  s.iterations = iterations;
  ReconParams params;
  params.dispersion = {p.step, p.along_height ? Axis::height : Axis::width};
  params.iterations = iterations;
  for (ReconMethod method : {ReconMethod::gap_tv, ReconMethod::admm_tv}) {
    SCOPED_TRACE(to_string(method));
    const auto x = reconstruct(method, y.view(), Mask<double>(mask.view()), p.C, params, {}, {Device::cpu});
    const auto expected = method == ReconMethod::gap_tv ? reference::gap_tv(p, to_doubles(y), to_doubles(mask), s)
                                                        : reference::admm_tv(p, to_doubles(y), to_doubles(mask), s);
    EXPECT_TRUE(all_near(to_doubles(x), expected.x, tolerance::kReconFloat64));
  }
}

// A batch of two, a per-band mask, dispersion along height with a negative step.
TEST(ReconGeometry, BatchPerBandMaskAlongHeight) {
  const CassiProblem p{2, 5, 13, 21, -3, true, true};
  check_iterations(p, random_array<double, 3>({p.C, p.H, p.W}, 8), 4, 7);
}

// Rows too wide for a core's L2: the TV of each image runs in strips of rows (generators/recon.h),
// each with the whole image's values, along either axis.
TEST(ReconGeometry, StripsOfWideImages) {
  for (const bool along_height : {false, true}) {
    SCOPED_TRACE(along_height ? "along height" : "along width");
    const CassiProblem p{1, 3, 60, 3000, along_height ? -2 : 2, along_height};
    check_iterations(p, random_array<double, 2>({p.H, p.W}, 10), 2, 9);
  }
}

// Without report_residual the callback still runs after every iteration, with a NaN residual, and
// the result is the same to the bit.
TEST(ReconProgress, ResidualOnlyWhenAskedFor) {
  const SmallScene scene;
  const auto y = cassi_forward(View<const float, 4>(scene.truth.data(), {1, 8, 32, 37}), scene.mask.view(),
                               {2, Axis::width}, {Device::cpu});
  for (ReconMethod method : {ReconMethod::gap_tv, ReconMethod::admm_tv}) {
    SCOPED_TRACE(to_string(method));
    ReconParams params;
    params.iterations = 3;
    std::vector<double> residuals;
    const IterationCallback record = [&](const IterationInfo &info) { residuals.push_back(info.residual); };
    const auto reported = reconstruct(method, y.view(), scene.mask.view(), 8, params, record, {Device::cpu});
    params.report_residual = false;
    const auto silent = reconstruct(method, y.view(), scene.mask.view(), 8, params, record, {Device::cpu});
    ASSERT_EQ(residuals.size(), 6u);
    for (int k = 0; k < 3; k++) {
      EXPECT_GT(residuals[k], 0) << k;
      EXPECT_TRUE(std::isnan(residuals[3 + k])) << k;
    }
    EXPECT_TRUE(all_near(to_doubles(silent), to_doubles(reported), tolerance::kExact));
  }
}

TEST(ReconGeometry, ZeroIterationsReturnTheAdjoint) {
  const SmallScene scene;
  const auto y = cassi_forward(View<const float, 4>(scene.truth.data(), {1, 8, 32, 37}), scene.mask.view(),
                               {2, Axis::width}, {Device::cpu});
  ReconParams params;
  params.iterations = 0;
  const auto x = reconstruct(ReconMethod::admm_tv, y.view(), scene.mask.view(), 8, params, {}, {Device::cpu});
  const auto adjoint = cassi_adjoint(y.view(), scene.mask.view(), 8, {2, Axis::width}, {Device::cpu});
  EXPECT_TRUE(all_near(to_doubles(x), to_doubles(adjoint), tolerance::kExact));
}

// ---- PSNR and SSIM ----

TEST(ReconQuality, PsnrKnownValues) {
  auto a = random_array<float, 2>({13, 17}, 1);
  Array<float, 2> b(a.shape());
  for (std::int64_t i = 0; i < a.size(); i++) b.data()[i] = a.data()[i] + 0.0625f;  // exact in float
  EXPECT_NEAR(psnr(b.view(), a.view()), -20 * std::log10(0.0625), 1e-6);            // 24.08 dB
  EXPECT_NEAR(psnr(b.view(), a.view(), 255.0), 20 * std::log10(255.0 / 0.0625), 1e-6);
  EXPECT_TRUE(std::isinf(psnr(a.view(), a.view())));
}

TEST(ReconQuality, SsimIdenticalImagesIsOne) {
  const auto a = random_array<double, 2>({19, 23}, 2);
  EXPECT_NEAR(ssim(a.view(), a.view()), 1.0, 1e-12);
}

// Two constant images a and b: every window has zero variance, so
// SSIM = (2ab + C1) / (a^2 + b^2 + C1) with C1 = (0.01)^2 (the contrast term is C2 / C2).
TEST(ReconQuality, SsimOfTwoConstantsHasClosedForm) {
  Array<double, 2> a({16, 20}), b({16, 20});
  for (std::int64_t i = 0; i < a.size(); i++) a.data()[i] = 0.2, b.data()[i] = 0.5;
  const double c1 = 1e-4;
  const double expected = (2 * 0.2 * 0.5 + c1) / (0.04 + 0.25 + c1);  // 0.689966...
  EXPECT_NEAR(ssim(a.view(), b.view()), expected, 1e-12);
}

// A random pair against the window-by-window reference (no separable filtering), float and double.
TEST(ReconQuality, SsimMatchesWindowReference) {
  const auto a = random_array<float, 2>({29, 34}, 3);
  auto b = random_array<float, 2>({29, 34}, 4);
  for (std::int64_t i = 0; i < b.size(); i++) b.data()[i] = 0.6f * a.data()[i] + 0.4f * b.data()[i];
  const double expected = reference::ssim(to_doubles(a), to_doubles(b), 29, 34);
  EXPECT_NEAR(ssim(a.view(), b.view()), expected, 1e-12);
  EXPECT_GT(expected, 0.3);
  EXPECT_LT(expected, 0.99);
  const auto q = band_quality(View<const float, 3>(a.data(), {1, 29, 34}), View<const float, 3>(b.data(), {1, 29, 34}));
  EXPECT_NEAR(q.mean_ssim, expected, 1e-12);
  EXPECT_NEAR(q.mean_psnr, reference::psnr(to_doubles(a), to_doubles(b)), 1e-9);
}

// ---- the demo-quality check: the synthetic 28-band 256 x 256 scene ----

TEST(ReconDemo, GapTvImprovesOnThePseudoInverse) {
  const std::int64_t C = 28, H = 256, W = 256;
  const auto truth = synth_scene(C, H, W);
  const auto mask = synth_mask(H, W, 7);
  const Dispersion d{2, Axis::width};
  const View<const float, 4> cube(truth.data(), {1, C, H, W});
  const auto y = cassi_forward(cube, mask.view(), d, {Device::cpu});
  const auto pinv = cassi_pinv(y.view(), mask.view(), C, d, {Device::cpu});
  ReconParams params;
  params.dispersion = d;
  const auto gap = reconstruct(ReconMethod::gap_tv, y.view(), mask.view(), C, params, {}, {Device::cpu});
  const auto admm = reconstruct(ReconMethod::admm_tv, y.view(), mask.view(), C, params, {}, {Device::cpu});
  const auto band0 = [&](const Array<float, 4> &x) { return View<const float, 3>(x.data(), {C, H, W}); };
  const auto q_pinv = band_quality(band0(pinv), truth.view());
  const auto q_gap = band_quality(band0(gap), truth.view());
  const auto q_admm = band_quality(band0(admm), truth.view());
  std::cout << "[ synthetic 28 x 256 x 256, 20 iterations, TV weight 0.1 x 5 ] mean PSNR / SSIM:\n"
            << "    pseudo-inverse " << q_pinv.mean_psnr << " dB / " << q_pinv.mean_ssim << "\n"
            << "    GAP-TV         " << q_gap.mean_psnr << " dB / " << q_gap.mean_ssim << "\n"
            << "    ADMM-TV        " << q_admm.mean_psnr << " dB / " << q_admm.mean_ssim << "\n";
  EXPECT_GT(q_gap.mean_psnr, q_pinv.mean_psnr + 1.0);
  EXPECT_GT(q_gap.mean_ssim, q_pinv.mean_ssim);
}

// ---- bad input ----

TEST(ReconErrors, BadArgumentsNameTheArgument) {
  const SmallScene scene;
  const Options cpu{Device::cpu};
  const Array<float, 3> y({1, 32, 37 + 14});
  auto x = poisoned<float, 4>({1, 8, 32, 37});
  ReconParams p;
  auto with = [&](auto change) {
    ReconParams q = p;
    change(q);
    return q;
  };
  EXPECT_HPIPE_ERROR(
      gap_tv(y.view(), scene.mask.view(), with([](ReconParams &q) { q.tv.weight = 0; }), x.view(), {}, cpu),
      "hpipe::gap_tv: tv.weight: expected a value from 2.93874e-36 to 3.40282e+35 (float32), got 0");
  EXPECT_HPIPE_ERROR(
      gap_tv(y.view(), scene.mask.view(), with([](ReconParams &q) { q.tv.iterations = 0; }), x.view(), {}, cpu),
      "tv.iterations: expected at least 1, got 0");
  EXPECT_HPIPE_ERROR(
      admm_tv(y.view(), scene.mask.view(), with([](ReconParams &q) { q.iterations = -1; }), x.view(), {}, cpu),
      "hpipe::admm_tv: iterations: expected at least 0, got -1");
  EXPECT_HPIPE_ERROR(
      admm_tv(y.view(), scene.mask.view(), with([](ReconParams &q) { q.gamma = -1; }), x.view(), {}, cpu),
      "gamma: expected a value from 0 to 3.40282e+35 (float32), got -1");
  // Parameters are taken in the kernels' type: 1e-40 and 1e39 are out of float32's reach.
  EXPECT_HPIPE_ERROR(tv_denoise(x.view(), TvParams{1e-40, 5}, cpu), "hpipe::tv_denoise: tv.weight", "got 1e-40");
  EXPECT_HPIPE_ERROR(
      gap_tv(y.view(), scene.mask.view(), with([](ReconParams &q) { q.lambda = 1e39; }), x.view(), {}, cpu),
      "hpipe::gap_tv: lambda: expected a value > 0, at most 3.40282e+35 (float32), got 1e+39");
  // lambda <= 0 takes no step towards the data (0) or away from it (the CLI refused it, the API did not).
  for (const double lambda : {0.0, -1.0})
    EXPECT_HPIPE_ERROR(
        gap_tv(y.view(), scene.mask.view(), with([&](ReconParams &q) { q.lambda = lambda; }), x.view(), {}, cpu),
        "hpipe::gap_tv: lambda: expected a value > 0", "got " + std::string(lambda == 0 ? "0" : "-1"));
  const Array<float, 3> short_y({1, 32, 40});
  EXPECT_HPIPE_ERROR(gap_tv(short_y.view(), scene.mask.view(), p, x.view(), {}, cpu),
                     "gap_tv: y: expected shape (1, 32, 51)", "(the output x), got (1, 32, 40)");
  const Array<float, 2> small_mask({32, 36});
  EXPECT_HPIPE_ERROR(gap_tv(y.view(), small_mask.view(), p, x.view(), {}, cpu), "mask: expected shape (32, 37)");
  EXPECT_HPIPE_ERROR(tv_denoise(x.view(), TvParams{0.1, 5}, poisoned<float, 4>({1, 8, 32, 36}).view(), cpu),
                     "hpipe::tv_denoise: out: expected shape (1, 8, 32, 37)", "got (1, 8, 32, 36)");
  EXPECT_HPIPE_ERROR(tv_denoise(x.view(), TvParams{-0.5, 5}, cpu), "tv.weight", "got -0.5");
  EXPECT_HPIPE_ERROR(reconstruct(ReconMethod::gap_tv, y.view(), scene.mask.view(), 40, p, {}, cpu),
                     "gap_tv: y: shape (1, 32, 51) is too small for 40 bands");
  EXPECT_HPIPE_ERROR(parse_recon_method("gap"), "method: expected gap-tv or admm-tv, got 'gap'");
  EXPECT_EQ(parse_recon_method("admm-tv"), ReconMethod::admm_tv);
  const Array<float, 2> a({10, 12}), b({10, 13});
  EXPECT_HPIPE_ERROR(psnr(View<const float, 2>(a.data(), {-1, 12}), View<const float, 2>(a.data(), {-1, 12})),
                     "hpipe::psnr: estimate: every dimension must be at least 0", "got shape (-1, 12)");
  EXPECT_HPIPE_ERROR(psnr(a.view(), b.view()),
                     "hpipe::psnr: estimate: expected the shape of truth (10, 13), got (10, 12)");
  EXPECT_HPIPE_ERROR(ssim(a.view(), a.view()), "hpipe::ssim: estimate: expected an image of at least 11 x 11",
                     "got (10, 12)");
  // Nothing was written by a rejected call.
  for (std::int64_t i = 0; i < x.size(); i++) ASSERT_TRUE(std::isnan(x.data()[i]));
}

}  // namespace
}  // namespace hpipe::test
