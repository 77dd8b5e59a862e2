// CASSI operators against the double-precision reference, identities, and bad input.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cstring>
#include <iostream>
#include <limits>
#include <numeric>
#include <sstream>
#include <type_traits>
#include <utility>

#include "cuda_memory.h"
#include "reference/cassi_reference.h"
#include "test_util.h"

namespace hpipe::test {
namespace {

using reference::CassiProblem;

const std::vector<CassiProblem> kProblems = {
    // B, C, H, W, step, along_height, per_band_mask
    {1, 1, 1, 1, 0},                 // the smallest problem
    {2, 3, 5, 7, 1},                 // odd sizes
    {1, 4, 6, 1, 2},                 // W = 1
    {2, 5, 4, 9, 0},                 // S = 0: bands stack
    {2, 5, 4, 9, -2},                // S < 0: bands move left
    {3, 6, 7, 5, 3, true},           // dispersion along height
    {1, 9, 33, 17, -1, true},        // negative step along height
    {2, 7, 13, 31, 2, false, true},  // per-band mask
    {1, 4, 11, 3, -5, true, true},   // per-band, height, negative, step > W
    {1, 28, 19, 61, 2},              // the W4 band count on an odd, non-square image
    {4, 2, 3, 40, 17},               // step larger than the vector width
    // Along width, bands are summed in groups (generators/cassi.h): whole groups and leftover bands,
    {2, 16, 5, 45, 3},                // with a group interior,
    {1, 15, 4, 40, -2, false, true},  // moving left, per-band mask,
    {1, 9, 3, 10, -3},                // no group interior: W < (group - 1) |S|
    // Each band's edges are added in whole vectors (4, 8 or 16 floats): images narrower than the
    // vectors that cover (group - 1) |S| columns sum band by band, as wide ones are whole edges.
    {1, 14, 3, 13, 2},
    {2, 7, 2, 16, -2, false, true},
    // Steps 1 and 2 have code of their own (schedules/cassi_cpu.cpp): S = 2 above, S = 1 here.
    {2, 10, 5, 33, 1},
    // Rows of whole 64-byte lines, which the cube outputs' streaming libraries can write (the
    // suite's run with HPIPE_STREAMING_BYTES=0 streams them).
    {2, 6, 5, 32, 2},
    {1, 5, 4, 48, -1, true, true},
};

std::string describe(const CassiProblem &p) {
  std::ostringstream s;
  s << "B=" << p.B << " C=" << p.C << " H=" << p.H << " W=" << p.W << " S=" << p.step
    << (p.along_height ? " along height" : " along width") << (p.per_band_mask ? ", per-band mask" : "");
  return s.str();
}

Dispersion dispersion(const CassiProblem &p) { return {p.step, p.along_height ? Axis::height : Axis::width}; }

// Random positive inputs for one problem, with a shared or per-band mask.
template <class T>
struct CassiInputs {
  CassiProblem p;
  Array<T, 4> x;
  Array<T, 3> y;
  Array<T, 2> shared_mask;
  Array<T, 3> band_mask;
  CassiInputs(const CassiProblem &problem, std::uint32_t seed)
      : p(problem),
        x(random_array<T, 4>({p.B, p.C, p.H, p.W}, seed)),
        y(random_array<T, 3>({p.B, p.Hm(), p.Wm()}, seed + 1)),
        shared_mask(random_array<T, 2>({p.H, p.W}, seed + 2)),
        band_mask(random_array<T, 3>({p.C, p.H, p.W}, seed + 3)) {}
  Mask<T> mask() const { return p.per_band_mask ? Mask<T>(band_mask.view()) : Mask<T>(shared_mask.view()); }
  std::vector<double> mask_values() const { return p.per_band_mask ? to_doubles(band_mask) : to_doubles(shared_mask); }
};

template <class T>
void check_every_op(const CassiProblem &p, Device device, std::uint32_t seed) {
  SCOPED_TRACE(describe(p));
  const Options on{device};
  const CassiInputs<T> in(p, seed);
  const auto x = to_doubles(in.x), y = to_doubles(in.y), m = in.mask_values();
  const auto d = dispersion(p);

  auto y_out = poisoned<T, 3>({p.B, p.Hm(), p.Wm()});
  cassi_forward(in.x.view(), in.mask(), d, y_out.view(), on);
  EXPECT_TRUE(all_near(to_doubles(y_out), reference::cassi_forward(p, x, m), tolerance::cassi_band_sum<T>(p.C)))
      << "forward";

  auto x_out = poisoned<T, 4>({p.B, p.C, p.H, p.W});
  cassi_adjoint(in.y.view(), in.mask(), d, x_out.view(), on);
  EXPECT_TRUE(all_near(to_doubles(x_out), reference::cassi_adjoint(p, y, m), tolerance::cassi_few_roundings<T>()))
      << "adjoint";

  auto phi = poisoned<T, 2>({p.Hm(), p.Wm()});
  cassi_phi(in.mask(), p.C, d, phi.view(), on);
  EXPECT_TRUE(all_near(to_doubles(phi), reference::cassi_phi(p, m), tolerance::cassi_band_sum<T>(p.C))) << "phi";

  x_out = poisoned<T, 4>({p.B, p.C, p.H, p.W});
  cassi_pinv(in.y.view(), in.mask(), d, x_out.view(), on);
  EXPECT_TRUE(all_near(to_doubles(x_out), reference::cassi_pinv(p, y, m), tolerance::cassi_band_sum_quotient<T>(p.C)))
      << "pinv";

  x_out = poisoned<T, 4>({p.B, p.C, p.H, p.W});
  cassi_pinv_alpha(in.y.view(), in.mask(), d, x_out.view(), on);
  EXPECT_TRUE(all_near(to_doubles(x_out), reference::cassi_pinv_alpha(p, y, m), tolerance::cassi_few_roundings<T>()))
      << "pinv_alpha";

  auto shifted = poisoned<T, 4>({p.B, p.C, p.Hm(), p.Wm()});
  cassi_shift(in.x.view(), d, shifted.view(), on);
  const auto shifted_ref = reference::cassi_shift(p, x);
  EXPECT_TRUE(all_near(to_doubles(shifted), shifted_ref, tolerance::kExact)) << "shift";

  x_out = poisoned<T, 4>({p.B, p.C, p.H, p.W});
  cassi_shift_back(shifted.view(), d, x_out.view(), on);
  EXPECT_TRUE(all_near(to_doubles(x_out), reference::cassi_shift_back(p, shifted_ref), tolerance::kExact))
      << "shift_back";

  // Inputs are never modified.
  const CassiInputs<T> again(p, seed);
  EXPECT_EQ(to_doubles(in.x), to_doubles(again.x));
  EXPECT_EQ(to_doubles(in.y), to_doubles(again.y));
  EXPECT_EQ(in.mask_values(), again.mask_values());
}

template <class T>
class CassiTyped : public ::testing::Test {};
using ElementTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CassiTyped, ElementTypes);

TYPED_TEST(CassiTyped, EveryOpMatchesReferenceOnCpu) {
  std::uint32_t seed = 100;
  for (const auto &p : kProblems) check_every_op<TypeParam>(p, Device::cpu, seed += 10);
}

TYPED_TEST(CassiTyped, EveryOpMatchesReferenceOnCuda) {
  if (!cuda_available()) GTEST_SKIP() << "no usable GPU: " << cuda_unavailable_reason();
  std::uint32_t seed = 500;
  for (const auto &p : kProblems) check_every_op<TypeParam>(p, Device::cuda, seed += 10);
}

TYPED_TEST(CassiTyped, AdjointIdentity) {
  using T = TypeParam;
  for (const auto &p : kProblems) {
    SCOPED_TRACE(describe(p));
    const CassiInputs<T> in(p, 7);
    const auto ax = cassi_forward(in.x.view(), in.mask(), dispersion(p), {Device::cpu});
    const auto aty = cassi_adjoint(in.y.view(), in.mask(), p.C, dispersion(p), {Device::cpu});
    const auto dot = [](const std::vector<double> &a, const std::vector<double> &b) {
      return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
    };
    const double lhs = dot(to_doubles(ax), to_doubles(in.y)), rhs = dot(to_doubles(in.x), to_doubles(aty));
    EXPECT_NEAR(lhs, rhs, tolerance::cassi_adjoint_identity_rel<T>(p.C) * std::abs(lhs));
  }
}

// A(A^+ y) = y for y = A x, with both inverses.
TYPED_TEST(CassiTyped, InversesAreRightInverses) {
  using T = TypeParam;
  for (const auto &p : kProblems) {
    SCOPED_TRACE(describe(p));
    const CassiInputs<T> in(p, 11);
    const auto y = cassi_forward(in.x.view(), in.mask(), dispersion(p), {Device::cpu});
    const auto via_phi = cassi_pinv(y.view(), in.mask(), p.C, dispersion(p), {Device::cpu});
    const auto via_alpha = cassi_pinv_alpha(y.view(), in.mask(), p.C, dispersion(p), {Device::cpu});
    const auto tol = tolerance::cassi_right_inverse<T>(p.C);
    EXPECT_TRUE(all_near(to_doubles(cassi_forward(via_phi.view(), in.mask(), dispersion(p), {Device::cpu})),
                         to_doubles(y), tol))
        << "A(pinv(y))";
    EXPECT_TRUE(all_near(to_doubles(cassi_forward(via_alpha.view(), in.mask(), dispersion(p), {Device::cpu})),
                         to_doubles(y), tol))
        << "A(pinv_alpha(y))";
  }
}

// The W4 workload: (16, 28, 256, 256), S = 2, x and mask random in (0, 1]; A -> column-count
// inverse -> A, mean absolute error against A x. Also checks every op at this size once.
TEST(CassiW4, RoundTripMeanAbsoluteError) {
  const CassiProblem p{16, 28, 256, 256, 2};
  const CassiInputs<float> in(p, 2024);
  const Dispersion d = dispersion(p);
  const auto y = cassi_forward(in.x.view(), in.mask(), d, {Device::cpu});
  EXPECT_TRUE(all_near(to_doubles(y), reference::cassi_forward(p, to_doubles(in.x), in.mask_values()),
                       tolerance::cassi_band_sum<float>(p.C)));
  const auto x_inv = cassi_pinv_alpha(y.view(), in.mask(), p.C, d, {Device::cpu});
  const auto y2 = cassi_forward(x_inv.view(), in.mask(), d, {Device::cpu});
  double total = 0;
  for (std::int64_t i = 0; i < y.size(); i++) total += std::abs(double(y2.data()[i]) - double(y.data()[i]));
  const double mae = total / double(y.size());
  std::cout << "[ W4 round trip ] mean |A(pinv_alpha(A x)) - A x| = " << mae << " (float32)\n";
  RecordProperty("w4_round_trip_mae", std::to_string(mae));
  EXPECT_LE(mae, tolerance::kCassiW4RoundTripMae);

  const auto x_pinv = cassi_pinv(y.view(), in.mask(), p.C, d, {Device::cpu});
  EXPECT_TRUE(all_near(to_doubles(x_pinv), reference::cassi_pinv(p, to_doubles(y), in.mask_values()),
                       tolerance::cassi_band_sum_quotient<float>(p.C)));
}

// Strided views: a cube that is every other element of a larger array, and a strided output.
TEST(CassiViews, NonContiguousInputsAndOutputs) {
  const CassiProblem p{2, 3, 5, 9, 2};
  const CassiInputs<float> in(p, 3);
  auto wide = random_array<float, 4>({p.B, p.C, p.H, 2 * p.W}, 5);
  for (std::int64_t b = 0; b < p.B; b++)
    for (std::int64_t c = 0; c < p.C; c++)
      for (std::int64_t h = 0; h < p.H; h++)
        for (std::int64_t w = 0; w < p.W; w++) wide(b, c, h, 2 * w) = in.x(b, c, h, w);
  const auto ws = wide.view().strides();
  View<const float, 4> strided_x(wide.data(), {p.B, p.C, p.H, p.W}, {ws[0], ws[1], ws[2], 2});

  auto y_wide = poisoned<float, 3>({p.B, p.Hm(), 3 * p.Wm()});
  const auto ys = y_wide.view().strides();
  View<float, 3> strided_y(y_wide.data() + 1, {p.B, p.Hm(), p.Wm()}, {ys[0], ys[1], 3});
  cassi_forward(strided_x, in.mask(), dispersion(p), strided_y, {Device::cpu});
  const auto expected = reference::cassi_forward(p, to_doubles(in.x), in.mask_values());
  EXPECT_TRUE(all_near(to_doubles(strided_y), expected, tolerance::cassi_band_sum<float>(p.C)));
  // Elements of y_wide between the strided ones are untouched (still NaN).
  EXPECT_TRUE(std::isnan(y_wide(0, 0, 0)));
  EXPECT_TRUE(std::isnan(y_wide(0, 0, 2)));
}

TEST(CassiErrors, BadArgumentsNameTheArgument) {
  const CassiProblem p{2, 3, 4, 5, 1};
  const CassiInputs<float> in(p, 1);
  const Dispersion d = dispersion(p);
  const Options cpu{Device::cpu};
  auto y = poisoned<float, 3>({p.B, p.Hm(), p.Wm()});

  auto bad_mask = random_array<float, 2>({p.H + 1, p.W}, 2);
  EXPECT_HPIPE_ERROR(cassi_forward(in.x.view(), Mask<float>(bad_mask.view()), d, y.view(), cpu), "cassi_forward",
                     "mask", "expected shape (4, 5)", "got (5, 5)");
  auto bad_bands = random_array<float, 3>({p.C + 1, p.H, p.W}, 2);
  EXPECT_HPIPE_ERROR(cassi_forward(in.x.view(), Mask<float>(bad_bands.view()), d, y.view(), cpu), "mask",
                     "expected shape (3, 4, 5)", "got (4, 4, 5)");

  auto wrong_y = poisoned<float, 3>({p.B, p.Hm(), p.Wm() + 1});
  EXPECT_HPIPE_ERROR(cassi_forward(in.x.view(), in.mask(), d, wrong_y.view(), cpu), "y: expected shape (2, 4, 7)",
                     "got (2, 4, 8)");
  auto wrong_x = poisoned<float, 4>({p.B, p.C, p.H, p.W + 1});
  EXPECT_HPIPE_ERROR(cassi_adjoint(in.y.view(), in.mask(), d, wrong_x.view(), cpu), "cassi_adjoint", "mask");

  EXPECT_HPIPE_ERROR(cassi_forward(View<const float, 4>(nullptr, {p.B, p.C, p.H, p.W}), in.mask(), d, y.view(), cpu),
                     "x: data pointer is null");
  EXPECT_HPIPE_ERROR(cassi_forward(in.x.view(), in.mask(), d, View<float, 3>(nullptr, {p.B, p.Hm(), p.Wm()}), cpu),
                     "y: data pointer is null");

  // y placed over the cube's own memory.
  auto x_copy = in.x;
  View<float, 3> y_over_x(x_copy.data(), {p.B, p.Hm(), p.Wm()});
  EXPECT_HPIPE_ERROR(cassi_forward(x_copy.view(), in.mask(), d, y_over_x, cpu), "y: overlaps input x");
  {
    // A cube in a buffer's even columns and its measurement in the odd ones share no element.
    const std::int64_t wm = p.Wm(), pitch = 2 * std::max<std::int64_t>(p.W, wm);
    std::vector<float> shared(static_cast<std::size_t>(p.B * p.C * p.H * pitch), std::nanf(""));
    const View<float, 4> cube(shared.data(), {p.B, p.C, p.H, p.W}, {p.C * p.H * pitch, p.H * pitch, pitch, 2});
    for (std::int64_t i = 0; i < in.x.size(); i++) {
      const std::int64_t w = i % p.W, h = i / p.W % p.H, c = i / (p.W * p.H) % p.C, b = i / (p.W * p.H * p.C);
      cube.data()[b * cube.stride(0) + c * cube.stride(1) + h * cube.stride(2) + w * 2] = in.x.data()[i];
    }
    const View<float, 3> odd(shared.data() + 1, {p.B, p.H, wm}, {p.C * p.H * pitch, pitch, 2});
    cassi_forward(View<const float, 4>(cube), in.mask(), d, odd, cpu);
    EXPECT_EQ(to_doubles(View<const float, 3>(odd)), to_doubles(cassi_forward(in.x.view(), in.mask(), d, cpu)));
  }

  EXPECT_HPIPE_ERROR(cassi_forward(in.x.view(), in.mask(), Dispersion{1, static_cast<Axis>(7)}, y.view(), cpu),
                     "dispersion", "axis");
  EXPECT_HPIPE_ERROR(cassi_pinv(in.y.view(), in.mask(), 0, d, cpu), "bands: expected at least 1, got 0");
  EXPECT_HPIPE_ERROR(cassi_pinv(in.y.view(), in.mask(), 40, d, cpu), "too small for 40 bands");
  // Nothing was written by a rejected call.
  for (std::int64_t i = 0; i < y.size(); i++) ASSERT_TRUE(std::isnan(y.data()[i]));
}

// Issue #15: shape arithmetic overflowed (2^62 bands gave a cube 12 wide), and the allocating
// forms allocated (and zeroed) before the checks: step 2^24 with 129 bands took 8.4 GB before the
// size error, step INT_MIN threw std::bad_alloc.
long max_resident_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

TEST(CassiErrors, ShapeOverflowAndOversizedOutputsFailBeforeAllocating) {
  const std::int64_t huge = std::int64_t(1) << 62;
  EXPECT_HPIPE_ERROR(cassi_cube_shape({1, 8, 8}, huge, Dispersion{4}), "hpipe::cassi_cube_shape", "bands",
                     "past 2^63 pixels");
  EXPECT_HPIPE_ERROR(cassi_cube_shape({1, 8, 8}, huge, Dispersion{1}), "hpipe::cassi_cube_shape", "measurement",
                     "shape (1, 8, 8) is too small for 4611686018427387904 bands");
  EXPECT_HPIPE_ERROR(cassi_measurement_shape({1, huge, 4, 4}, Dispersion{2}), "hpipe::cassi_measurement_shape", "cube");
  EXPECT_HPIPE_ERROR(cassi_measurement_shape({1, 3, 4, std::numeric_limits<std::int64_t>::max() - 1}, Dispersion{2}),
                     "hpipe::cassi_measurement_shape", "wider than 2^63");
  // A dispersion the ops refuse has no shape either (the Python binding sizes its outputs so).
  EXPECT_HPIPE_ERROR(cassi_measurement_shape({1, 3, 4, 4}, Dispersion{1000000000}), "hpipe::cassi_measurement_shape",
                     "dispersion", "|step| must be at most 2^24 pixels, got 1000000000");
  EXPECT_HPIPE_ERROR(cassi_cube_shape({1, 4, 6}, 3, Dispersion{-(1 << 25)}), "hpipe::cassi_cube_shape", "dispersion",
                     "|step| must be at most 2^24 pixels");
  // Fewer than 1 band and negative extents: errors, not shapes.
  EXPECT_HPIPE_ERROR(cassi_cube_shape({1, 4, 10}, 0, Dispersion{2}), "hpipe::cassi_cube_shape", "bands", "at least 1");
  EXPECT_HPIPE_ERROR(cassi_cube_shape({1, -4, 10}, 1, Dispersion{2}), "hpipe::cassi_cube_shape", "measurement",
                     "at least 0", "(1, -4, 10)");
  EXPECT_HPIPE_ERROR(cassi_measurement_shape({1, 3, 4, -5}, Dispersion{2}), "hpipe::cassi_measurement_shape", "cube",
                     "at least 0", "(1, 3, 4, -5)");

  auto x = random_array<float, 4>({1, 129, 1, 1}, 40);
  auto mask = random_array<float, 2>({1, 1}, 41);
  const long before = max_resident_kib();
  EXPECT_HPIPE_ERROR(cassi_forward(x.view(), mask.view(), Dispersion{1 << 24}, {Device::cpu}), "hpipe::cassi_forward",
                     "y", "exceeds 2^31");
  EXPECT_HPIPE_ERROR(cassi_forward(x.view(), mask.view(), Dispersion{std::numeric_limits<int>::min()}, {Device::cpu}),
                     "hpipe::cassi_forward", "dispersion", "|step| must be at most 2^24");
  auto y = random_array<float, 3>({1, 1, 1 << 20}, 42);
  EXPECT_HPIPE_ERROR(cassi_adjoint(y.view(), mask.view(), 1 << 12, Dispersion{1}, {Device::cpu}),
                     "hpipe::cassi_adjoint", "x", "spans more than 2 GiB");
  EXPECT_HPIPE_ERROR(cassi_pinv(y.view(), mask.view(), huge, Dispersion{4}, {Device::cpu}), "hpipe::cassi_pinv",
                     "bands", "past 2^63 pixels");
  EXPECT_HPIPE_ERROR(cassi_pinv(y.view(), mask.view(), 1 << 20, Dispersion{2}, {Device::cpu}), "hpipe::cassi_pinv", "y",
                     "is too small for 1048576 bands");
  EXPECT_LT(max_resident_kib() - before, 256 * 1024) << "an output was allocated before the checks";
}

TEST(CassiErrors, CudaRequestWithoutGpu) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is usable here; this checks the message where none is";
  const CassiProblem p{1, 2, 3, 4, 1};
  const CassiInputs<float> in(p, 1);
  auto y = poisoned<float, 3>({p.B, p.Hm(), p.Wm()});
  EXPECT_HPIPE_ERROR(cassi_forward(in.x.view(), in.mask(), dispersion(p), y.view(), {Device::cuda}), "cassi_forward",
                     "CUDA was requested but CUDA is not usable", cuda_unavailable_reason());
  View<const float, 4> on_gpu(in.x.data(), {p.B, p.C, p.H, p.W}, Memory::cuda);
  EXPECT_HPIPE_ERROR(cassi_forward(on_gpu, in.mask(), dispersion(p), y.view(), {Device::cpu}),
                     "x: is in CUDA memory but the device is cpu");
  // A reconstruction names itself, not the first op it runs.
  auto x = poisoned<float, 4>({p.B, p.C, p.H, p.W});
  ReconParams params;
  params.dispersion = dispersion(p);
  EXPECT_HPIPE_ERROR(gap_tv(std::as_const(y).view(), in.mask(), params, x.view(), {}, {Device::cuda}),
                     "hpipe::gap_tv: device: CUDA was requested");
  // A Device that is none of the three.
  EXPECT_HPIPE_ERROR(cassi_forward(in.x.view(), in.mask(), dispersion(p), y.view(), {static_cast<Device>(9)}),
                     "hpipe::cassi_forward: device: expected Device::cpu, Device::cuda or Device::automatic",
                     "got Device(9)");
  // Automatic falls back to the CPU.
  cassi_forward(in.x.view(), in.mask(), dispersion(p), y.view(), {Device::automatic});
  EXPECT_FALSE(std::isnan(y.data()[0]));
}

// Device pointers the caller owns are used in place, inputs and outputs.
TEST(CassiCuda, DevicePointersInAndOut) {
  if (!cuda_available()) GTEST_SKIP() << "no usable GPU: " << cuda_unavailable_reason();
  const CassiProblem p{2, 5, 17, 33, 2};
  const CassiInputs<float> in(p, 9);
  DeviceMemory x_dev(in.x.data(), in.x.size() * sizeof(float));
  DeviceMemory m_dev(in.shared_mask.data(), in.shared_mask.size() * sizeof(float));
  DeviceMemory y_dev(nullptr, p.B * p.Hm() * p.Wm() * sizeof(float));
  cassi_forward(View<const float, 4>(static_cast<const float *>(x_dev.get()), {p.B, p.C, p.H, p.W}, Memory::cuda),
                Mask<float>(View<const float, 2>(static_cast<const float *>(m_dev.get()), {p.H, p.W}, Memory::cuda)),
                dispersion(p), View<float, 3>(static_cast<float *>(y_dev.get()), {p.B, p.Hm(), p.Wm()}, Memory::cuda),
                {Device::cuda});
  auto y = poisoned<float, 3>({p.B, p.Hm(), p.Wm()});
  y_dev.copy_to(y.data(), y.size() * sizeof(float));
  EXPECT_TRUE(all_near(to_doubles(y), reference::cassi_forward(p, to_doubles(in.x), in.mask_values()),
                       tolerance::cassi_band_sum<float>(p.C)));
}

}  // namespace
}  // namespace hpipe::test
