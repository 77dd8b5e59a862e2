// Transcendentals: ULP error against higher-precision references over the input range, special
// values, ranks and strides, logsumexp against a scipy-like reference, and bad input.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <tuple>
#include <type_traits>

#include "cuda_memory.h"
#include "reference/math_reference.h"
#include "test_util.h"

namespace hpipe::test {
namespace {

using reference::Fn;

using tolerance::kUlpContract;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <class T>
const char *type_name() {
  return sizeof(T) == 4 ? "float32" : "float64";
}

template <class T, int N>
void apply(Fn fn, View<const T, N> x, View<T, N> y, const Options &o = {Device::cpu}) {
  switch (fn) {
    case Fn::exp: return hpipe::exp(x, y, o);
    case Fn::log: return hpipe::log(x, y, o);
    case Fn::erf: return hpipe::erf(x, y, o);
  }
}

// The largest ULP error seen, and where.
template <class T>
struct UlpReport {
  long double worst = 0;
  T at = 0;
  std::int64_t count = 0;
  void add(T x, T y, long double exact) {
    const long double e = reference::ulp_error<T>(y, exact);
    count++;
    if (e > worst) worst = e, at = x;
  }
  std::string describe(Fn fn) const {
    std::ostringstream s;
    s << type_name<T>() << " " << reference::name(fn) << ": max " << std::setprecision(4) << double(worst)
      << " ULP at x = " << std::setprecision(sizeof(T) == 4 ? 9 : 17) << double(at) << " over " << count << " values";
    return s.str();
  }
  void report(Fn fn, const char *what) const {
    std::cout << "[ ULP " << what << " ] " << describe(fn) << "\n";
    ::testing::Test::RecordProperty(std::string(type_name<T>()) + "_" + reference::name(fn) + "_max_ulp",
                                    std::to_string(double(worst)));
  }
};

// Runs fn over `xs` (in calls of up to 2^22 elements, outputs poisoned) and collects the errors.
template <class T>
void measure(Fn fn, const std::vector<T> &xs, UlpReport<T> &report) {
  const std::int64_t n = static_cast<std::int64_t>(xs.size());
  auto y = poisoned<T, 1>({n});
  apply<T, 1>(fn, View<const T, 1>(xs.data(), {n}), y.view());
  for (std::int64_t i = 0; i < n; i++) report.add(xs[i], y.data()[i], reference::exact(fn, xs[i]));
}

// Every `stride`-th float32 bit pattern, all signs, exponents, NaNs and infinities included.
UlpReport<float> sweep_float32(Fn fn, std::uint64_t stride) {
  UlpReport<float> report;
  const std::size_t chunk = std::size_t(1) << 22;
  std::vector<float> xs;
  xs.reserve(chunk);
  for (std::uint64_t p = 0; p < (std::uint64_t(1) << 32); p += stride) {
    const std::uint32_t bits = static_cast<std::uint32_t>(p);
    float x;
    std::memcpy(&x, &bits, sizeof x);
    xs.push_back(x);
    if (xs.size() == chunk) measure(fn, xs, report), xs.clear();
  }
  if (!xs.empty()) measure(fn, xs, report);
  return report;
}

class MathUlpFloat32 : public ::testing::TestWithParam<Fn> {};

// CI: every 97th bit pattern (44 million values per function, a few seconds).
TEST_P(MathUlpFloat32, StridedSweepOfAllBitPatterns) {
  const auto report = sweep_float32(GetParam(), 97);
  report.report(GetParam(), "float32 every 97th pattern");
  EXPECT_LE(double(report.worst), kUlpContract.of(GetParam())) << report.describe(GetParam());
}

// All 2^32 patterns: minutes per function on two cores, so only when HPIPE_EXHAUSTIVE=1.
TEST_P(MathUlpFloat32, ExhaustiveSweep) {
  const char *on = std::getenv("HPIPE_EXHAUSTIVE");
  if (!on || std::string(on) != "1") GTEST_SKIP() << "takes minutes per function; set HPIPE_EXHAUSTIVE=1 to run";
  const auto report = sweep_float32(GetParam(), 1);
  report.report(GetParam(), "float32 exhaustive");
  EXPECT_LE(double(report.worst), kUlpContract.of(GetParam())) << report.describe(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Math, MathUlpFloat32, ::testing::Values(Fn::exp, Fn::log, Fn::erf),
                         [](const auto &info) { return std::string(reference::name(info.param)); });

// float64 samples: uniform over ranges, and log-uniform magnitudes (random exponent in
// [e_lo, e_hi] and mantissa, random sign when `signed_`), which reach the tiny and denormal inputs.
struct Uniform {
  double lo, hi;
  int count;
};
struct LogUniform {
  int e_lo, e_hi;
  bool signed_;
  int count;
};

std::vector<double> samples(const std::vector<Uniform> &uniform, const std::vector<LogUniform> &log_uniform,
                            std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> xs;
  for (const auto &u : uniform) {
    std::uniform_real_distribution<double> d(u.lo, u.hi);
    for (int i = 0; i < u.count; i++) xs.push_back(d(rng));
  }
  for (const auto &l : log_uniform) {
    std::uniform_int_distribution<int> e(l.e_lo, l.e_hi);
    std::uniform_real_distribution<double> m(1.0, 2.0);
    for (int i = 0; i < l.count; i++) {
      const double x = std::ldexp(m(rng), e(rng));  // below 2^-1022 this rounds into the denormals
      xs.push_back(l.signed_ && (rng() & 1) ? -x : x);
    }
  }
  return xs;
}

std::vector<double> float64_samples(Fn fn) {
  switch (fn) {
    case Fn::exp:  // all of the finite range, the reduction's |r| <= ln2/2, denormal results, overflow
      return samples({{-746, 710, 1000000}, {-1, 1, 1000000}, {-745.2, -708, 200000}, {700, 709.8, 100000}},
                     {{-80, 0, true, 300000}}, 1);
    case Fn::log:  // every exponent (denormals too), m on both sides of sqrt(2), near 1
      return samples({{0.5, 2, 1000000}, {0.999, 1.001, 300000}, {1e-300, 1e300, 100000}},
                     {{-1074, 1023, false, 1000000}}, 2);
    case Fn::erf:  // the polynomial regions and their breaks, tiny inputs, the tails
      return samples({{-6.5, 6.5, 1000000},
                      {0.95, 1.05, 200000},
                      {1.45, 1.55, 100000},
                      {1.95, 2.05, 100000},
                      {2.7, 2.8, 100000},
                      {3.7, 3.8, 100000},
                      {5.9, 6.1, 100000}},
                     {{-1074, 2, true, 500000}}, 3);
  }
  return {};
}

class MathUlpFloat64 : public ::testing::TestWithParam<Fn> {};

TEST_P(MathUlpFloat64, DenseRandomSampling) {
  UlpReport<double> report;
  measure(GetParam(), float64_samples(GetParam()), report);
  report.report(GetParam(), "float64 sampled");
  EXPECT_LE(double(report.worst), kUlpContract.of(GetParam())) << report.describe(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Math, MathUlpFloat64, ::testing::Values(Fn::exp, Fn::log, Fn::erf),
                         [](const auto &info) { return std::string(reference::name(info.param)); });

// The accuracy contract on whichever CPU variant this process runs: ctest runs the suite again
// with HPIPE_CPU_LIMIT=avx2 and =sse41 (tests/CMakeLists.txt), which covers the FMA-less path.
TEST(MathOnCpuVariant, AccuracyHolds) {
  const char *what = cpu_limit() == CpuLimit::none ? "best variant" : cpu_limit() == CpuLimit::avx2 ? "AVX2" : "SSE4.1";
  for (Fn fn : {Fn::exp, Fn::log, Fn::erf}) {
    const auto f32 = sweep_float32(fn, 9973);
    auto xs = float64_samples(fn);
    xs.resize(200000);
    UlpReport<double> f64;
    measure(fn, xs, f64);
    f32.report(fn, what);
    f64.report(fn, what);
    EXPECT_LE(double(f32.worst), kUlpContract.of(fn)) << what << ": " << f32.describe(fn);
    EXPECT_LE(double(f64.worst), kUlpContract.of(fn)) << what << ": " << f64.describe(fn);
  }
}

template <class T>
class MathTyped : public ::testing::Test {};
using ElementTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(MathTyped, ElementTypes);

// Special values are exactly C's: infinities, zeros (with their sign), NaN, the overflow and
// underflow edges and the denormals.
TYPED_TEST(MathTyped, SpecialValuesAsCmath) {
  using T = TypeParam;
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const T tiny = std::numeric_limits<T>::denorm_min(), big = std::numeric_limits<T>::max();
  const T overflow = sizeof(T) == 4 ? T(88.7228394) : T(709.782712893384);
  const T underflow = sizeof(T) == 4 ? T(-103.972084) : T(-745.1332191019411);
  const std::vector<T> xs = {0,
                             -T(0),
                             inf,
                             -inf,
                             nan,
                             tiny,
                             -tiny,
                             big,
                             -big,
                             1,
                             -1,
                             overflow,
                             std::nextafter(overflow, inf),
                             underflow,
                             std::nextafter(underflow, -inf),
                             T(-87.5),
                             T(-700.5),
                             T(1e-30),
                             T(-1e-30),
                             T(4.5),
                             T(-6.25)};
  for (Fn fn : {Fn::exp, Fn::log, Fn::erf}) {
    SCOPED_TRACE(reference::name(fn));
    const auto n = static_cast<std::int64_t>(xs.size());
    auto y = poisoned<T, 1>({n});
    apply<T, 1>(fn, View<const T, 1>(xs.data(), {n}), y.view());
    for (std::int64_t i = 0; i < n; i++) {
      const T want = static_cast<T>(reference::exact(fn, xs[i]));
      const T got = y.data()[i];
      if (std::isnan(want) || std::isinf(want) || want == 0 || want == 1 || want == -1) {
        // Exact results: the same value, the same sign of zero, NaN for NaN.
        EXPECT_TRUE((std::isnan(want) && std::isnan(got)) || (got == want && std::signbit(got) == std::signbit(want)))
            << reference::name(fn) << "(" << xs[i] << ") = " << got << ", expected " << want;
      } else {
        EXPECT_LE(double(reference::ulp_error<T>(got, reference::exact(fn, xs[i]))), kUlpContract.of(fn))
            << reference::name(fn) << "(" << xs[i] << ") = " << got;
      }
    }
  }
}

// Any rank, dense or strided, gives the same bits as the flat call; inputs stay untouched.
TYPED_TEST(MathTyped, RanksAndStridesMatchFlatCall) {
  using T = TypeParam;
  const auto x3 = random_array<T, 3>({3, 5, 7}, 11, -3.0, 3.0);
  for (Fn fn : {Fn::exp, Fn::log, Fn::erf}) {
    SCOPED_TRACE(reference::name(fn));
    auto flat = poisoned<T, 1>({x3.size()});
    apply<T, 1>(fn, View<const T, 1>(x3.data(), {x3.size()}), flat.view());
    auto y3 = poisoned<T, 3>({3, 5, 7});
    apply<T, 3>(fn, x3.view(), y3.view());
    EXPECT_EQ(0, std::memcmp(flat.data(), y3.data(), sizeof(T) * x3.size()));

    // Every other element of a wider array, into a transposed output.
    auto wide = random_array<T, 2>({5, 14}, 12, -3.0, 3.0);
    const View<const T, 2> strided(wide.data(), {5, 7}, {14, 2});
    auto yt = poisoned<T, 2>({7, 5});
    const View<T, 2> transposed(yt.data(), {5, 7}, {1, 5});
    apply<T, 2>(fn, strided, transposed);
    const auto copy = wide;
    for (int r = 0; r < 5; r++)
      for (int c = 0; c < 7; c++) {
        const T x = strided(r, c);
        auto one = poisoned<T, 1>({1});
        apply<T, 1>(fn, View<const T, 1>(&x, {1}), one.view());
        EXPECT_TRUE(std::memcmp(&one.data()[0], &transposed(r, c), sizeof(T)) == 0) << r << ", " << c;
      }
    EXPECT_EQ(0, std::memcmp(wide.data(), copy.data(), sizeof(T) * wide.size())) << "x was modified";

    // A transposed x, and every other column of a wider one, into a dense y: rows gathered in tiles
    // on hpipe's threads (tiles of whole rows, the last one shorter; few rows, tiles of a part of
    // each row, the last one narrower; rows two elements apart and in reverse order).
    const auto big = random_array<T, 2>({901, 2 * 703}, 14, 0.1, 3.0);
    for (const View<const T, 2> &x :
         {View<const T, 2>(big.data(), {703, 901}, {1, 2 * 703}), View<const T, 2>(big.data(), {5, 901}, {1, 2 * 703}),
          View<const T, 2>(big.data(), {37, 901}, {2, 2 * 703}),
          View<const T, 2>(big.data() + 19, {20, 901}, {-1, 2 * 703}),
          View<const T, 2>(big.data(), {901, 703}, {2 * 703, 2})}) {
      Array<T, 2> packed(x.shape());
      for (std::int64_t r = 0; r < x.shape(0); r++)
        for (std::int64_t c = 0; c < x.shape(1); c++) packed(r, c) = x(r, c);
      auto expected = poisoned<T, 2>(x.shape()), got = poisoned<T, 2>(x.shape());
      apply<T, 2>(fn, packed.view(), expected.view());
      apply<T, 2>(fn, x, got.view());
      EXPECT_EQ(0, std::memcmp(got.data(), expected.data(), sizeof(T) * got.size()))
          << "x shape " << x.shape(0) << " x " << x.shape(1) << ", strides " << x.stride(0) << ", " << x.stride(1);
    }

    const auto x4 = random_array<T, 4>({2, 3, 1, 9}, 13, 0.1, 9.0);
    auto y4 = poisoned<T, 4>({2, 3, 1, 9});
    apply<T, 4>(fn, x4.view(), y4.view());
    auto flat4 = poisoned<T, 1>({x4.size()});
    apply<T, 1>(fn, View<const T, 1>(x4.data(), {x4.size()}), flat4.view());
    EXPECT_EQ(0, std::memcmp(flat4.data(), y4.data(), sizeof(T) * x4.size()));
  }
}

// fn of each element of x in a call of its own.
template <class T>
std::vector<T> each_alone(Fn fn, const Array<T, 1> &x) {
  std::vector<T> alone(x.size());
  for (std::int64_t i = 0; i < x.size(); i++) {
    auto one = poisoned<T, 1>({1});
    apply<T, 1>(fn, View<const T, 1>(x.data() + i, {1}), one.view());
    alone[i] = one.data()[0];
  }
  return alone;
}

// Lengths around the vector width (8 to 64 lanes per variant) and the tasks of 16384 elements: the
// last vector is shifted back over its predecessor, shorter arrays take one guarded vector; past
// 2^20 elements tasks grow with the length, to sizes of no round number (the input repeats there).
// Each element has the bits of a call on that element alone, and none is left unwritten.
TYPED_TEST(MathTyped, EveryLengthMatchesElementByElement) {
  using T = TypeParam;
  std::vector<std::int64_t> lengths;
  for (std::int64_t n = 1; n <= 70; n++) lengths.push_back(n);
  for (std::int64_t n : {127, 129, 16383, 16384, 16385, 16416, 32769}) lengths.push_back(n);
  const auto x = random_array<T, 1>({32769}, 17, -5.0, 5.0);
  for (Fn fn : {Fn::exp, Fn::log, Fn::erf}) {
    SCOPED_TRACE(reference::name(fn));
    const std::vector<T> alone = each_alone(fn, x);
    for (std::int64_t n : lengths) {
      auto y = poisoned<T, 1>({n});
      apply<T, 1>(fn, View<const T, 1>(x.data(), {n}), y.view());
      EXPECT_EQ(0, std::memcmp(y.data(), alone.data(), sizeof(T) * n)) << "n = " << n;
    }
    // Outputs not 64-byte aligned, which streaming stores could not write (the suite's run with
    // HPIPE_STREAMING_BYTES=0 streams every aligned output): the same bits.
    for (std::int64_t offset = 1; offset < 4; offset++) {
      const std::int64_t n = 16385;
      auto y = poisoned<T, 1>({n + offset});
      apply<T, 1>(fn, View<const T, 1>(x.data(), {n}), View<T, 1>(y.data() + offset, {n}));
      EXPECT_EQ(0, std::memcmp(y.data() + offset, alone.data(), sizeof(T) * n)) << "offset " << offset;
    }
    for (std::int64_t n : {(std::int64_t(1) << 20) + 3, (std::int64_t(1) << 21) + 4099}) {
      Array<T, 1> repeated({n});
      for (std::int64_t i = 0; i < n; i++) repeated.data()[i] = x.data()[i % x.size()];
      auto y = poisoned<T, 1>({n});
      apply<T, 1>(fn, repeated.view(), y.view());
      std::int64_t mismatches = 0;
      for (std::int64_t i = 0; i < n; i++)
        mismatches += std::memcmp(&y.data()[i], &alone[i % x.size()], sizeof(T)) != 0;
      EXPECT_EQ(0, mismatches) << "n = " << n;
    }
  }
}

// erf float64 takes a cheap form in vectors whose elements all lie in (-1, 1) and its full form in
// the others (generators/math.h): runs of small values with one element outside (beyond 1, at the
// plateau, infinite, NaN, -0 beside them) at every position of a vector and across vector
// boundaries, over every length up to a few vectors and at odd offsets, give each element the bits
// of a call on that element alone (a cheap one where it is small) and the contract's accuracy.
// The other functions have one form: the same holds trivially.
TYPED_TEST(MathTyped, CheapAndFullFormsAgreeInEveryVector) {
  using T = TypeParam;
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const std::vector<T> outside = {T(1), T(-1.5), T(3.2), T(-6.5), inf, -inf, nan, T(1.0000001), T(-0.9999999)};
  auto x = random_array<T, 1>({4099}, 19, -0.999, 0.999);
  for (std::int64_t i = 0, k = 0; i < x.size(); i += 1 + (k * 7) % 23, k++) x.data()[i] = outside[k % outside.size()];
  x.data()[100] = T(-0.0), x.data()[101] = T(0.0);
  for (Fn fn : {Fn::exp, Fn::log, Fn::erf}) {
    SCOPED_TRACE(reference::name(fn));
    const std::vector<T> alone = each_alone(fn, x);
    for (std::int64_t i = 0; i < x.size(); i++)
      if (fn == Fn::erf && std::isfinite(x.data()[i]))
        EXPECT_LE(double(reference::ulp_error<T>(alone[i], reference::exact(fn, double(x.data()[i])))),
                  kUlpContract.of(fn))
            << "erf(" << x.data()[i] << ")";
    for (std::int64_t offset : {0, 1, 5})
      for (std::int64_t n = 1; n <= 100; n++) {
        auto y = poisoned<T, 1>({n});
        apply<T, 1>(fn, View<const T, 1>(x.data() + offset, {n}), y.view());
        EXPECT_EQ(0, std::memcmp(y.data(), alone.data() + offset, sizeof(T) * n))
            << "offset " << offset << ", n = " << n;
      }
    auto y = poisoned<T, 1>({x.size()});
    apply<T, 1>(fn, x.view(), y.view());
    EXPECT_EQ(0, std::memcmp(y.data(), alone.data(), sizeof(T) * x.size())) << "n = " << x.size();
  }
}

TYPED_TEST(MathTyped, AllocatingFormsMatch) {
  using T = TypeParam;
  const auto x = random_array<T, 2>({4, 9}, 14, 0.05, 2.0);
  auto y = poisoned<T, 2>({4, 9});
  hpipe::log(x.view(), y.view(), {Device::cpu});
  EXPECT_EQ(to_doubles(hpipe::log(x.view(), {Device::cpu})), to_doubles(y));
}

TYPED_TEST(MathTyped, BadArguments) {
  using T = TypeParam;
  auto x = random_array<T, 2>({3, 4}, 15);
  auto y = poisoned<T, 2>({4, 3});
  EXPECT_HPIPE_ERROR(hpipe::exp(x.view(), y.view()), "hpipe::exp", "y", "expected shape (3, 4)", "got (4, 3)");
  // y over x but not the same view: one element further, or the same memory read backwards.
  EXPECT_HPIPE_ERROR(hpipe::erf(View<const T, 1>(x.data(), {11}), View<T, 1>(x.data() + 1, {11})), "hpipe::erf", "y",
                     "overlaps input x");
  EXPECT_HPIPE_ERROR(hpipe::erf(View<const T, 1>(x.data(), {6}, {2}), View<T, 1>(x.data() + 10, {6}, {-2})),
                     "hpipe::erf", "y", "overlaps input x");
  EXPECT_HPIPE_ERROR(hpipe::logsumexp(x.view(), 2), "hpipe::logsumexp", "axis", "[-2, 2)", "got 2");
  auto out = poisoned<T, 1>({4});
  EXPECT_HPIPE_ERROR(hpipe::logsumexp(x.view(), 1, out.view()), "hpipe::logsumexp", "out", "expected shape (3,)",
                     "got (4,)");
  // out inside x, on the path that reads long rows in place (and on the kernel's path, axis 0).
  auto rows = random_array<T, 2>({3, 600}, 16);
  const View<const T, 2> rows_view = rows.view();
  EXPECT_HPIPE_ERROR(hpipe::logsumexp(rows_view, 1, View<T, 1>(rows.data() + 10, {3})), "hpipe::logsumexp", "out",
                     "overlaps input x");
  EXPECT_HPIPE_ERROR(hpipe::logsumexp(rows_view, 0, View<T, 1>(rows.data() + 10, {600})), "hpipe::logsumexp", "out",
                     "overlaps input x");
  // A null x of strided rows into a dense y, and of short rows for logsumexp: each is gathered or
  // transposed before any kernel sees it.
  auto dense_out = poisoned<T, 2>({100, 10});
  EXPECT_HPIPE_ERROR(hpipe::exp(View<const T, 2>(nullptr, {100, 10}, {1, 100}), dense_out.view()), "hpipe::exp", "x",
                     "data pointer is null");
  auto short_out = poisoned<T, 1>({100});
  EXPECT_HPIPE_ERROR(hpipe::logsumexp(View<const T, 2>(nullptr, {100, 10}), 1, short_out.view()), "hpipe::logsumexp",
                     "x", "data pointer is null");
}

// In place (y the very view x is, as np.exp(x, out=x)): the bits of a call into another array, for
// lengths around every CPU variant's vector (whose last one is shifted back over the one before,
// so would read elements already written), dense, in 2-D with strided rows and with a strided
// innermost dimension.
TYPED_TEST(MathTyped, InPlaceGivesTheBitsOfACallIntoAnotherArray) {
  using T = TypeParam;
  const auto source = random_array<T, 1>({3 * 260}, 23, 0.01, 9.0);  // the largest buffer below
  for (Fn fn : {Fn::exp, Fn::log, Fn::erf}) {
    SCOPED_TRACE(reference::name(fn));
    for (const std::int64_t n : {1, 3, 8, 15, 16, 17, 31, 33, 63, 64, 65, 100, 128, 129, 257, 3 * 257}) {
      auto expected = poisoned<T, 1>({n});
      apply<T, 1>(fn, View<const T, 1>(source.data(), {n}), expected.view());
      Array<T, 1> x({n});
      std::copy(source.data(), source.data() + n, x.data());
      apply<T, 1>(fn, View<const T, 1>(x.view()), x.view());
      EXPECT_EQ(0, std::memcmp(x.data(), expected.data(), sizeof(T) * n)) << "n = " << n;
    }
    // Rows of 65 in a pitch of 80, and every other element of rows of 130.
    for (const std::array<std::int64_t, 3> layout : {std::array<std::int64_t, 3>{65, 80, 1}, {65, 260, 2}}) {
      const auto [row, pitch, step] = layout;
      Array<T, 1> buffer({3 * pitch});
      std::copy(source.data(), source.data() + buffer.size(), buffer.data());
      const auto before = to_doubles(buffer);
      const View<T, 2> x(buffer.data(), {3, row}, {pitch, step});
      auto expected = poisoned<T, 2>({3, row});
      apply<T, 2>(fn, View<const T, 2>(x), expected.view());
      apply<T, 2>(fn, View<const T, 2>(x), x);
      EXPECT_EQ(to_doubles(View<const T, 2>(x)), to_doubles(expected)) << "rows of " << row << ", step " << step;
      for (std::int64_t i = 0; i < buffer.size(); i++)  // and nothing between the elements
        if (i % pitch >= row * step || i % pitch % step != 0) EXPECT_EQ(double(buffer.data()[i]), before[i]) << i;
    }
  }
}

// Views that interleave without sharing an element (a row's even and odd columns, as NumPy's
// a[:, ::2] and a[:, 1::2]) are disjoint: the output is written, the input read as it was.
TYPED_TEST(MathTyped, InterleavedViewsAreDisjoint) {
  using T = TypeParam;
  auto buffer = random_array<T, 2>({5, 26}, 19);
  const View<const T, 2> even(buffer.data(), {5, 13}, {26, 2});
  const auto expected = to_doubles(hpipe::exp(even, {Device::cpu}).view());
  hpipe::exp(even, View<T, 2>(buffer.data() + 1, {5, 13}, {26, 2}), {Device::cpu});
  EXPECT_EQ(to_doubles(View<const T, 2>(buffer.data() + 1, {5, 13}, {26, 2})), expected);
  // Columns of the same parity share memory.
  const View<const T, 2> even12(buffer.data(), {5, 12}, {26, 2});
  EXPECT_HPIPE_ERROR(hpipe::exp(even12, View<T, 2>(buffer.data() + 2, {5, 12}, {26, 2}), {Device::cpu}), "hpipe::exp",
                     "y", "overlaps input x");
}

// Issue #15: a view with an outer extent of 0 (or less) once processed one row, writing past
// the end of y. An extent of 0 now gives NumPy's empty result (tests/test_runtime.cpp); a negative
// one is an error, and y stays untouched either way.
TYPED_TEST(MathTyped, EmptyViewsWriteNothingAndNegativeExtentsAreErrors) {
  using T = TypeParam;
  auto x = random_array<T, 1>({5}, 17);
  auto y = poisoned<T, 1>({5});
  for (const std::int64_t rows : {std::int64_t(0), std::int64_t(-1)}) {
    const View<const T, 2> xs(x.data(), {rows, 5});
    const View<T, 2> ys(y.data(), {rows, 5});
    // Strided rows (the row-by-row path) too.
    const View<const T, 2> strided(x.data(), {rows, 2}, {4, 2});
    const View<T, 2> strided_y(y.data(), {rows, 2}, {4, 2});
    auto out = poisoned<T, 1>({5});
    if (rows == 0) {
      for (const Fn fn : {Fn::exp, Fn::log, Fn::erf}) apply<T, 2>(fn, xs, ys);
      hpipe::exp(strided, strided_y);
    } else {
      for (const Fn fn : {Fn::exp, Fn::log, Fn::erf})
        EXPECT_HPIPE_ERROR((apply<T, 2>(fn, xs, ys)), "x", "every dimension must be at least 0", "got shape (-1, 5)");
      EXPECT_HPIPE_ERROR(hpipe::exp(strided, strided_y), "every dimension must be at least 0");
      EXPECT_HPIPE_ERROR(hpipe::logsumexp(xs, 0, out.view()), "hpipe::logsumexp", "x",
                         "every dimension must be at least 0");
      EXPECT_TRUE(std::all_of(out.data(), out.data() + 5, [](T v) { return std::isnan(v); }));
    }
  }
  EXPECT_TRUE(std::all_of(y.data(), y.data() + 5, [](T v) { return std::isnan(v); })) << "y was written";
}

// Issue #15: overlap was checked per kernel call, i.e. per 2^27-element piece and per row, so y
// overlapping x in another piece or row passed and computed exp(exp(x)). Checked on whole views.
TYPED_TEST(MathTyped, OverlapAcrossPiecesOrRowsIsAnError) {
  using T = TypeParam;
  // y = x + 2^27 over 2^28 elements: never touched when the check holds (uninitialised pages).
  const std::int64_t piece = std::int64_t(1) << 27, n = 2 * piece;
  const std::unique_ptr<T[]> big(new T[n + piece]);
  EXPECT_HPIPE_ERROR(hpipe::exp(View<const T, 1>(big.get(), {n}), View<T, 1>(big.get() + piece, {n})), "hpipe::exp",
                     "y", "overlaps input x");
  // Strided rows (one call per row): y starting at x's second row.
  auto buffer = random_array<T, 1>({64}, 18);
  const auto before = to_doubles(buffer);
  const View<const T, 2> x(buffer.data(), {4, 8}, {16, 1});
  const View<T, 2> y(buffer.data() + 16, {3, 8}, {16, 1});
  const View<const T, 2> x3(buffer.data(), {3, 8}, {16, 1});
  EXPECT_HPIPE_ERROR(hpipe::log(x3, y), "hpipe::log", "y", "overlaps input x");
  // logsumexp's copying paths (non-mergeable x, strided out, the transposed short rows).
  EXPECT_HPIPE_ERROR(hpipe::logsumexp(x, 1, View<T, 1>(buffer.data() + 20, {4}, {2})), "hpipe::logsumexp", "out",
                     "overlaps input x");
  EXPECT_HPIPE_ERROR(hpipe::logsumexp(x, 0, View<T, 1>(buffer.data() + 40, {8}, {2})), "overlaps input x");
  EXPECT_EQ(to_doubles(buffer), before) << "an input was modified";
}

// ---------------------------------------------------------------- logsumexp

// Where a logsumexp check runs: the CPU, or CUDA with x and out in host memory (hpipe copies) or
// in CUDA memory (device pointers, the kernels' own layouts: no host-side rows path or transpose).
enum class Where { cpu, cuda_host_memory, cuda_memory };

const char *to_string(Where w) {
  return w == Where::cpu ? "cpu" : w == Where::cuda_host_memory ? "cuda, host memory" : "cuda, CUDA memory";
}

// out against the double-precision reference of x's values along axis a (0 <= a < N): finite
// results within tolerance; -inf, +inf and NaN exactly.
template <class T, int N>
void expect_logsumexp_of(const Array<T, N> &x, int a, const Array<T, N - 1> &out) {
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < a; d++) outer *= x.shape(d);
  for (int d = a + 1; d < N; d++) inner *= x.shape(d);
  const auto expected = reference::logsumexp(to_doubles(x), outer, x.shape(a), inner);
  const auto got = to_doubles(out);
  std::vector<double> got_finite, expected_finite;
  for (std::size_t i = 0; i < got.size(); i++) {
    if (std::isfinite(expected[i])) {
      got_finite.push_back(got[i]), expected_finite.push_back(expected[i]);
    } else {
      EXPECT_TRUE((std::isnan(expected[i]) && std::isnan(got[i])) || got[i] == expected[i])
          << "at " << i << ": got " << got[i] << ", expected " << expected[i];
    }
  }
  EXPECT_TRUE(all_near(got_finite, expected_finite, tolerance::logsumexp<T>(x.shape(a))));
}

// Checks logsumexp over `axis` of a C-order array against the reference.
template <class T, int N>
void check_logsumexp(const Array<T, N> &x, int axis, Where where = Where::cpu) {
  std::ostringstream trace;
  trace << "shape (";
  for (int d = 0; d < N; d++) trace << (d ? ", " : "") << x.shape(d);
  trace << "), axis " << axis << ", " << to_string(where);
  SCOPED_TRACE(trace.str());
  const int a = axis < 0 ? axis + N : axis;
  typename Array<T, N - 1>::Extents out_shape{};
  for (int d = 0, j = 0; d < N; d++)
    if (d != a) out_shape[j++] = x.shape(d);
  auto out = poisoned<T, N - 1>(out_shape);
  const Array<T, N> before = x;
  if (where == Where::cuda_memory) {
    DeviceMemory x_dev(x.data(), sizeof(T) * x.size()), out_dev(out.data(), sizeof(T) * out.size());
    hpipe::logsumexp(View<const T, N>(static_cast<const T *>(x_dev.get()), x.shape(), Memory::cuda), axis,
                     View<T, N - 1>(static_cast<T *>(out_dev.get()), out_shape, Memory::cuda), {Device::cuda});
    out_dev.copy_to(out.data(), sizeof(T) * out.size());
  } else {
    hpipe::logsumexp(x.view(), axis, out.view(), {where == Where::cpu ? Device::cpu : Device::cuda});
  }
  expect_logsumexp_of<T, N>(x, a, out);
  EXPECT_EQ(0, std::memcmp(before.data(), x.data(), sizeof(T) * x.size())) << "x was modified";
}

// Every axis of 2-D to 4-D arrays: rows not a multiple of the chunk, columns not a multiple of a
// vector, in one CPU task and in three (2560 columns at most, the last one shorter), fewer columns
// than a warp, large magnitudes.
template <class T>
void check_logsumexp_every_axis(Where where) {
  const auto x2 = random_array<T, 2>({77, 1031}, 21, -20.0, 20.0);
  check_logsumexp<T, 2>(x2, 0, where);
  check_logsumexp<T, 2>(x2, 1, where);
  check_logsumexp<T, 2>(x2, -1, where);
  const auto wide = random_array<T, 2>({45, 5131}, 27, -20.0, 20.0);
  check_logsumexp<T, 2>(wide, 0, where);
  const auto few = random_array<T, 2>({3, 700}, 29, -20.0, 20.0);  // few rows: read in place on the CPU
  check_logsumexp<T, 2>(few, 1, where);
  const auto small = random_array<T, 2>({1, 3}, 22, -1.0, 1.0);
  check_logsumexp<T, 2>(small, 0, where);
  check_logsumexp<T, 2>(small, 1, where);
  const auto x3 = random_array<T, 3>({5, 33, 6}, 23, -50.0, 50.0);
  for (int axis = 0; axis < 3; axis++) check_logsumexp<T, 3>(x3, axis, where);
  const auto x4 = random_array<T, 4>({2, 3, 65, 7}, 24, -5.0, 5.0);
  for (int axis = 0; axis < 4; axis++) check_logsumexp<T, 4>(x4, axis, where);
  // Large magnitudes: without the shift every exp would overflow or underflow.
  const auto huge = random_array<T, 2>({40, 9}, 25, 500.0, 1000.0);
  check_logsumexp<T, 2>(huge, 0, where);
  const auto neg = random_array<T, 2>({40, 9}, 26, -1000.0, -500.0);
  check_logsumexp<T, 2>(neg, 0, where);
  // Two and three rows of values near 0: results near 0, where the rounding of the float32 terms
  // and of their pairs shows most (the tolerance's absolute part).
  for (int rows : {2, 3}) {
    const auto near_zero = random_array<T, 2>({rows, 4001}, 28 + rows, -1.5, 0.0);
    check_logsumexp<T, 2>(near_zero, 0, where);
  }
}

// scipy's special cases, down columns (axis 0) and along rows (axis 1), in the first and a later
// chunk of rows: all -inf -> -inf; a +inf entry -> +inf; NaN -> NaN, whatever comes before or
// after it; -inf entries are ignored, whole chunks of them too.
template <class T>
void check_logsumexp_special_values(Where where) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const int rows = 70, columns = 9;
  auto x = random_array<T, 2>({rows, columns}, 31, -3.0, 3.0);
  for (int r = 0; r < rows; r++) x(r, 0) = -inf;  // column of -inf
  x(3, 1) = inf;                                  // +inf in the first chunk
  x(65, 2) = inf;                                 // +inf in a later chunk, after large values
  x(60, 2) = T(80);
  x(40, 3) = nan;                               // NaN
  x(50, 4) = -inf, x(2, 4) = -inf;              // some -inf among finite values
  x(10, 5) = inf, x(11, 5) = -inf;              // both infinities
  x(1, 6) = inf, x(66, 6) = nan;                // +inf, then NaN in a later chunk
  x(0, 7) = nan, x(67, 7) = inf;                // NaN, then +inf in a later chunk
  for (int r = 0; r < 40; r++) x(r, 8) = -inf;  // -inf, then finite values from a later chunk
  check_logsumexp<T, 2>(x, 0, where);
  Array<T, 2> t({columns, rows});  // the same columns as rows
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < columns; c++) t(c, r) = x(r, c);
  check_logsumexp<T, 2>(t, 1, where);

  // The same cases in fewer rows than a chunk (on the CPU one chunk of just those rows).
  const int few = 5;
  auto s = random_array<T, 2>({few, columns}, 32, -3.0, 3.0);
  for (int r = 0; r < few; r++) s(r, 0) = -inf;
  s(3, 1) = inf;
  s(1, 2) = T(80), s(4, 2) = inf;
  s(2, 3) = nan;
  s(0, 4) = -inf, s(3, 4) = -inf;
  s(1, 5) = inf, s(2, 5) = -inf;
  s(0, 6) = inf, s(4, 6) = nan;
  s(0, 7) = nan, s(4, 7) = inf;
  for (int r = 0; r < 3; r++) s(r, 8) = -inf;
  check_logsumexp<T, 2>(s, 0, where);
  Array<T, 2> st({columns, few});
  for (int r = 0; r < few; r++)
    for (int c = 0; c < columns; c++) st(c, r) = s(r, c);
  check_logsumexp<T, 2>(st, 1, where);
}

TYPED_TEST(MathTyped, LogSumExpEveryAxisMatchesReference) { check_logsumexp_every_axis<TypeParam>(Where::cpu); }

TYPED_TEST(MathTyped, LogSumExpSpecialValues) { check_logsumexp_special_values<TypeParam>(Where::cpu); }

// Long contiguous rows (and few rows of lengths the rows kernel does not take) take the lanes path
// (16 partial results per row or row segment, combined in double with the row's tail): special
// values in the blocks and in the tail, a row of -inf, rows enough for one kernel call and few
// rows (cut into segments), few short rows, a long 1-D x.
TYPED_TEST(MathTyped, LogSumExpAlongLongRows) {
  using T = TypeParam;
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  constexpr std::int64_t n = 140001;  // 8750 * 16 + 1
  auto x = random_array<T, 2>({6, n}, 61, -30.0, 30.0);
  x(1, 50000) = inf;  // in a block
  for (std::int64_t c = 0; c < n; c++) x(2, c) = -inf;
  x(3, n - 1) = nan;                    // in the tail
  x(4, n - 1) = T(90);                  // the maximum in the tail
  x(5, 5) = -inf, x(5, n - 11) = -inf;  // -inf among finite values
  check_logsumexp<T, 2>(x, 1);
  const auto few = random_array<T, 2>({1, 200003}, 62, -5.0, 5.0);  // one row: segments
  check_logsumexp<T, 2>(few, 1);
  const auto many = random_array<T, 2>({5, 131074}, 63, -5.0, 5.0);  // rows of 8192 blocks + 2
  check_logsumexp<T, 2>(many, 1);
  for (std::int64_t rows : {1, 2, 15})  // few rows: float32 rows of 16 and 17 (on CUDA all of them)
    for (std::int64_t n : {16, 17, 100, 511, 512, 1031, 2047})
      check_logsumexp<T, 2>(random_array<T, 2>({rows, n}, std::uint32_t(rows * 7 + n), -30.0, 30.0), 1);
  auto v = random_array<T, 1>({1000003}, 64, -40.0, 10.0);
  v(123457) = T(12);
  const std::vector<double> ref = reference::logsumexp(to_doubles(v), 1, v.shape(0), 1);
  EXPECT_TRUE(all_near({double(hpipe::logsumexp(v.view(), {Device::cpu}))}, ref, tolerance::logsumexp<T>(v.shape(0))));
}

// x a few elements into a cache line (as NumPy allocates) and over 1 MiB: the columns before the
// line (axis 0) run as a call of their own, bit for bit as from a copy on a line; along rows (the
// rows kernel) the same bits too, special values among the first elements.
TYPED_TEST(MathTyped, LogSumExpOffACacheLine) {
  using T = TypeParam;
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  constexpr std::int64_t rows = 128, pitch = 2560, columns = pitch - 16;  // rows a whole number of lines apart
  auto space = random_array<T, 2>({rows, pitch}, 71, -20.0, 20.0);
  for (std::int64_t offset : {1, 3, 5}) {  // elements into the line: the first 64 / sizeof(T) - offset lead
    SCOPED_TRACE("offset " + std::to_string(offset));
    T *first = space.data() + offset;
    first[3 * pitch + 2] = nan, first[4 * pitch + 1] = inf, first[5 * pitch] = T(90), first[6 * pitch + 2] = -inf;
    const View<const T, 2> x(first, {rows, columns}, {pitch, 1});
    Array<T, 2> copy({rows, columns});
    for (std::int64_t r = 0; r < rows; r++) std::copy_n(first + r * pitch, columns, &copy(r, 0));
    const auto down = hpipe::logsumexp(x, 0, {Device::cpu}),
               down_copy = hpipe::logsumexp(copy.view(), 0, {Device::cpu});
    EXPECT_EQ(0, std::memcmp(down.data(), down_copy.data(), sizeof(T) * columns));
    auto along = poisoned<T, 1>({rows});
    hpipe::logsumexp(x, 1, along.view(), {Device::cpu});
    expect_logsumexp_of<T, 2>(copy, 1, along);
    const auto along_copy = hpipe::logsumexp(copy.view(), 1, {Device::cpu});
    EXPECT_EQ(0, std::memcmp(along.data(), along_copy.data(), sizeof(T) * rows));
  }
}

// From 1024 rows on, the CPU reduces columns in segments of rows, combined in double: 2-D down axis
// 0 (the last 9 rows after the 11 segments of 272 join the combination as they are) with scipy's
// special cases in segments and in those rows; 3-D along axis 1 with fewer slices than segments (a
// call per slice) and more (a call per segment); a column alone, strided (the short rows' path),
// the same bits as among others.
TYPED_TEST(MathTyped, LogSumExpDownManyRowsInSegments) {
  using T = TypeParam;
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  constexpr std::int64_t rows = 3001, columns = 11, segment = 272, last = 11 * segment;  // after the segments
  auto x = random_array<T, 2>({rows, columns}, 66, -20.0, 20.0);
  for (std::int64_t r = 0; r < rows; r++) x(r, 0) = -inf;               // all -inf
  for (std::int64_t r = 0; r < last; r++) x(r, 1) = -inf;               // finite in the last rows only
  x(300, 2) = nan;                                                      // NaN in the second segment
  x(rows - 1, 3) = inf;                                                 // +inf in the last rows
  x(5, 4) = inf, x(last + 3, 4) = nan;                                  // +inf, then NaN in the last rows
  x(last - 1, 5) = T(95);                                               // the maximum at a segment's end
  x(last, 6) = T(95);                                                   // the maximum in the last rows
  for (std::int64_t r = segment; r < 2 * segment; r++) x(r, 7) = -inf;  // a segment of -inf
  x(0, 8) = inf, x(rows - 1, 8) = -inf;                                 // both infinities
  check_logsumexp<T, 2>(x, 0);
  check_logsumexp<T, 3>(random_array<T, 3>({3, 1500, 7}, 67, -30.0, 30.0), 1);
  check_logsumexp<T, 3>(random_array<T, 3>({20, 1100, 5}, 68, -30.0, 30.0), 1);
  const auto x3 = random_array<T, 3>({20, 1500, 9}, 69, -30.0, 30.0);
  const auto whole = hpipe::logsumexp(x3.view(), 1, {Device::cpu});
  for (std::int64_t j = 0; j < 9; j++) {
    Array<T, 3> spaced({20, 2 * 1500, 1});  // every other element: contiguous, it would be a row of the rows kernel
    for (std::int64_t o = 0; o < 20; o++)
      for (std::int64_t r = 0; r < 1500; r++) spaced(o, 2 * r, 0) = x3(o, r, j);
    const View<const T, 3> one(spaced.data(), {20, 1500, 1}, {2 * 1500, 2, 1});
    const auto alone = hpipe::logsumexp(one, 1, {Device::cpu});
    for (std::int64_t o = 0; o < 20; o++)
      EXPECT_EQ(0, std::memcmp(&alone(o, 0), &whole(o, j), sizeof(T))) << "slice " << o << ", column " << j;
  }
}

// Values that rise along the axis: every chunk leads, so every fold rescales the running sum, and
// the rescaling factors' errors add up over thousands of folds (steps from 1e-4 to 3 per row).
TYPED_TEST(MathTyped, LogSumExpRisingAlongTheAxis) {
  using T = TypeParam;
  const std::int64_t rows = 40001, columns = 37;
  auto x = random_array<T, 2>({rows, columns}, 65, -1e-3, 1e-3);
  Array<T, 2> transposed({columns, rows});
  for (std::int64_t r = 0; r < rows; r++)
    for (std::int64_t c = 0; c < columns; c++) {
      x(r, c) += T(double(r) * 1e-4 * std::pow(1.25, double(c)));
      transposed(c, r) = x(r, c);
    }
  check_logsumexp<T, 2>(x, 0);
  check_logsumexp<T, 2>(transposed, 1);
}

// Short or strided rows along the last axis run as tasks of a few thousand rows, each transposing
// its own: many short rows (several tasks, the last one shorter), the same into a strided out (the
// same bits, the gaps untouched), rows of 1 to 2047, and rows read with a column stride of 2 (long
// rows: tasks of 64).
// 20000 rows of n elements 32768 apart, so that x spans more than a kernel buffer may (2 GiB),
// along the last axis: the same bits as the dense rows'. Address space only: a page of each row is
// touched (no huge pages).
template <class T>
void check_logsumexp_of_rows_far_apart(std::int64_t n, std::uint32_t seed) {
  constexpr std::int64_t rows = 20000, row_stride = 32768;
  const std::size_t bytes = std::size_t(rows * row_stride) * sizeof(T);
  void *space = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(space, MAP_FAILED);
  const std::unique_ptr<void, std::function<void(void *)>> unmap(space, [bytes](void *p) { munmap(p, bytes); });
  madvise(space, bytes, MADV_NOHUGEPAGE);
  T *far = static_cast<T *>(space);
  const auto near = random_array<T, 2>({rows, n}, seed, -5.0, 5.0);
  for (std::int64_t r = 0; r < rows; r++) std::copy_n(&near(r, 0), n, far + r * row_stride);
  const auto far_result = hpipe::logsumexp(View<const T, 2>(far, {rows, n}, {row_stride, 1}), 1, {Device::cpu});
  EXPECT_EQ(to_doubles(far_result), to_doubles(hpipe::logsumexp(near.view(), 1, {Device::cpu})));
}

TYPED_TEST(MathTyped, LogSumExpOfManyShortOrStridedRows) {
  using T = TypeParam;
  const auto many = random_array<T, 2>({20011, 7}, 44, -30.0, 30.0);
  check_logsumexp<T, 2>(many, 1);
  const auto dense = hpipe::logsumexp(many.view(), 1, {Device::cpu});
  auto spaced = poisoned<T, 1>({3 * 20011});
  hpipe::logsumexp(many.view(), 1, View<T, 1>(spaced.data(), {20011}, {3}), {Device::cpu});
  for (std::int64_t r = 0; r < 20011; r++) {
    ASSERT_EQ(std::memcmp(&spaced(3 * r), &dense(r), sizeof(T)), 0) << "row " << r;
    ASSERT_TRUE(std::isnan(spaced(3 * r + 1)) && std::isnan(spaced(3 * r + 2))) << "row " << r;
  }
  // Contiguous rows shorter than the rows kernel's 16, which the transposes split by shuffles
  // (narrower than 16 bytes) or cut into tiles of 16 bytes, and rows of every other element, which
  // they copy element by element, from a few to the lengths the column kernel cuts into segments
  // (from 1024): each result that of the same column of the dense transpose down axis 0, bit for
  // bit (the same kernel, on the tasks' transposes).
  for (std::int64_t n : {1, 2, 3, 4, 5, 8, 9, 10, 11, 13, 15, -3, -16, -17, -65, -1023, -1024, -2047}) {
    const std::int64_t step = n < 0 ? 2 : 1, length = n < 0 ? -n : n;
    const std::int64_t rows = 2 * 4099 / (length / 16 + 1) + 1;  // odd, several tasks
    const auto x = random_array<T, 2>({rows, step * length}, std::uint32_t(50 + length), -20.0, 20.0);
    Array<T, 2> xt({length, rows});
    for (std::int64_t r = 0; r < rows; r++)
      for (std::int64_t c = 0; c < length; c++) xt(c, r) = x(r, step * c);
    const View<const T, 2> rows_of_x(x.data(), {rows, length}, {step * length, step});
    const auto along = hpipe::logsumexp(rows_of_x, 1, {Device::cpu}),
               down = hpipe::logsumexp(xt.view(), 0, {Device::cpu});
    ASSERT_EQ(0, std::memcmp(along.data(), down.data(), sizeof(T) * std::size_t(rows)))
        << "rows of " << length << ", every " << step << " element";
  }
  const auto wide = random_array<T, 2>({200, 3000}, 45, -5.0, 5.0);
  Array<T, 2> picked({200, 1500});
  for (std::int64_t r = 0; r < 200; r++)
    for (std::int64_t c = 0; c < 1500; c++) picked(r, c) = wide(r, 2 * c);
  const auto got = hpipe::logsumexp(View<const T, 2>(wide.data(), {200, 1500}, {3000, 2}), 1, {Device::cpu});
  EXPECT_TRUE(
      all_near(to_doubles(got), reference::logsumexp(to_doubles(picked), 200, 1500, 1), tolerance::logsumexp<T>(1500)));

  // Rows far apart: only the tasks' transposes are kernel buffers.
  check_logsumexp_of_rows_far_apart<T>(10, 46);
}

// Contiguous rows of 32 (float64: 16) to 131071 take the rows kernel on the CPU (but few rows of
// 8192 and more): whole blocks of 16 (float32 in pairs, the last one alone where their count is
// odd) and a tail block that ends at the row's end, whose lanes the whole blocks counted are left
// out of the sum. Lengths around those cases, in several tasks and in part of a group of rows;
// each row's bits the same in a call of that row alone and at another row stride; special values
// in a whole block, in the tail block's own lane and in a lane it shares with the whole blocks
// (the maximum there counted once); rows of many terms far below their maximum (the rounding of
// x - max carried); rows farther apart than a kernel buffer spans.
TYPED_TEST(MathTyped, LogSumExpAlongRowsInCache) {
  using T = TypeParam;
  const std::int64_t kernel_from = std::is_same_v<T, float> ? 32 : 16;  // the runtime's kRowsKernelFrom
  for (std::int64_t n : {16, 17, 31, 32, 33, 47, 48, 49, 100, 255, 1000, 2047, 5000, 131071}) {
    const std::int64_t rows = 2 * (std::int64_t(1) << 15) / n + 5;
    const auto x = random_array<T, 2>({rows, n}, std::uint32_t(70 + n), -30.0, 30.0);
    check_logsumexp<T, 2>(x, 1);
    const auto all = hpipe::logsumexp(x.view(), 1, {Device::cpu});
    Array<T, 2> padded({rows, n + 3});
    for (std::int64_t r = 0; r < rows; r++) std::copy_n(&x(r, 0), n, &padded(r, 0));
    const auto strided = hpipe::logsumexp(View<const T, 2>(padded.data(), {rows, n}, {n + 3, 1}), 1, {Device::cpu});
    ASSERT_EQ(0, std::memcmp(all.data(), strided.data(), sizeof(T) * std::size_t(rows))) << "rows of " << n;
    for (std::int64_t r : {std::int64_t(0), rows / 2, rows - 1}) {
      if (n < kernel_from || n >= 8192) break;  // alone: the lanes path
      const auto alone = hpipe::logsumexp(View<const T, 2>(&x(r, 0), {1, n}), 1, {Device::cpu});
      ASSERT_EQ(0, std::memcmp(&alone(0), &all(r), sizeof(T))) << "row " << r << " of " << n;
    }
  }
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  for (std::int64_t n : {17, 33, 49}) {
    const std::int64_t shared = n - 9, own = n - 1, whole = 3;  // whole: a lane of a whole block only
    auto x = random_array<T, 2>({12, n}, std::uint32_t(90 + n), -3.0, 3.0);
    for (std::int64_t c = 0; c < n; c++) x(0, c) = x(9, c) = x(10, c) = -inf;
    x(1, own) = inf;
    x(2, shared) = nan;
    x(3, shared) = inf;
    x(4, shared) = T(90);
    x(5, shared) = -inf, x(5, own) = -inf, x(5, whole) = -inf;
    x(6, own) = nan;
    x(7, 0) = inf, x(7, own) = nan;
    x(8, own) = T(90);
    x(9, own) = T(2.5);
    x(10, shared) = T(-7.25);
    x(11, whole) = T(90), x(11, shared) = T(89);
    check_logsumexp<T, 2>(x, 1);
  }
  // Rows of one maximum and the rest a value below it whose difference to it rounds in float, by
  // the most, with results near 0: every term's shift rounds alike (which alone gave 1.9, 2.1 and
  // 3.8 times the tolerance). 32 rows: the rows kernel where there are up to 16 threads.
  for (auto [n, below, top] : {std::tuple{255, -5.840691566467285, -1.340691328048706},
                               std::tuple{4096, -8.411483764648438, -2.4114835262298584},
                               std::tuple{131071, -11.820297241210938, -3.3202977180480957}}) {
    Array<T, 2> far_below({32, n});
    for (std::int64_t r = 0; r < 32; r++)
      for (std::int64_t c = 0; c < n; c++) far_below(r, c) = T(c == r ? top : below);
    check_logsumexp<T, 2>(far_below, 1);
  }
  // Rows far apart: the rows kernel's calls take as many rows as a kernel buffer spans.
  check_logsumexp_of_rows_far_apart<T>(100, 99);
}

TYPED_TEST(MathTyped, LogSumExpOfVectorAndStridedViews) {
  using T = TypeParam;
  const auto v = random_array<T, 1>({1000}, 41, -10.0, 10.0);
  std::vector<double> ref = reference::logsumexp(to_doubles(v), 1, 1000, 1);
  EXPECT_TRUE(all_near({double(hpipe::logsumexp(v.view(), {Device::cpu}))}, ref, tolerance::logsumexp<T>(1000)));
  // A transposed (non-mergeable) input is copied; the result is that of the dense transpose.
  const auto x = random_array<T, 3>({4, 6, 5}, 42, -2.0, 2.0);
  const View<const T, 3> perm(x.data(), {5, 4, 6}, {1, 30, 5});
  Array<T, 3> dense({5, 4, 6});
  for (int a = 0; a < 5; a++)
    for (int b = 0; b < 4; b++)
      for (int c = 0; c < 6; c++) dense(a, b, c) = perm(a, b, c);
  const auto got = hpipe::logsumexp(perm, 1, {Device::cpu});
  EXPECT_EQ(to_doubles(got), to_doubles(hpipe::logsumexp(dense.view(), 1, {Device::cpu})));
}

// A column's result does not depend on where it lies among the columns (in a vector's body or a
// guarded last vector, first or last task): the same bits for any block of columns, as a batch
// split across processes (hpipe.dask) needs. Rows fewer than a chunk, a chunk and a few, and
// enough for segments.
TYPED_TEST(MathTyped, LogSumExpColumnsGiveTheSameBitsInAnyBlock) {
  using T = TypeParam;
  for (std::int64_t rows : {6, 16, 37, 1100}) {
    const auto x = random_array<T, 2>({rows, 45}, 43, -3.0, 3.0);
    const auto whole = to_doubles(hpipe::logsumexp(x.view(), 0, {Device::cpu}));
    for (std::int64_t first = 0; first < 45; first += 7)
      for (std::int64_t width : {1, 3, 8, 11, 19}) {
        if (first + width > 45) continue;
        const View<const T, 2> block(x.data() + first, {rows, width}, {45, 1});
        const auto got = to_doubles(hpipe::logsumexp(block, 0, {Device::cpu}));
        const std::vector<double> want(whole.begin() + first, whole.begin() + first + width);
        EXPECT_EQ(got, want) << rows << " rows, columns " << first << " to " << first + width;
      }
  }
}

TYPED_TEST(MathTyped, EveryOpOnCuda) {
  if (!cuda_available()) GTEST_SKIP() << "no usable GPU: " << cuda_unavailable_reason();
  using T = TypeParam;
  const auto x = random_array<T, 2>({37, 1031}, 51, -4.0, 4.0);
  for (Fn fn : {Fn::exp, Fn::log, Fn::erf}) {
    auto gpu = poisoned<T, 2>(x.shape());
    apply<T, 2>(fn, x.view(), gpu.view(), {Device::cuda});
    UlpReport<T> report;
    for (std::int64_t i = 0; i < x.size(); i++)
      report.add(x.data()[i], gpu.data()[i], reference::exact(fn, x.data()[i]));
    EXPECT_LE(double(report.worst), kUlpContract.of(fn)) << report.describe(fn);
  }
  for (Where where : {Where::cuda_host_memory, Where::cuda_memory}) {
    check_logsumexp_every_axis<T>(where);
    check_logsumexp_special_values<T>(where);
  }
  // More outer slices than a CUDA grid's y dimension holds (65535), and one column.
  const auto tall = random_array<T, 2>({70000, 3}, 52, -4.0, 4.0);
  check_logsumexp<T, 2>(tall, 1, Where::cuda_memory);
  check_logsumexp<T, 2>(tall, 0, Where::cuda_memory);
}

}  // namespace
}  // namespace hpipe::test
