// Batched dot product against the long-double reference: the accuracy bound of hpipe/dot.h,
// odd and edge shapes around the kernel's block (32) and chunk (2048) sizes, strided and
// transposed views, K = 10^6, N = 10^5, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <sstream>

#include "reference/dot_reference.h"
#include "test_util.h"

namespace hpipe::test {
namespace {

// The bound of hpipe/dot.h for one row, plus the reference's own error.
template <class T>
double dot_bound(double exact, double magnitude, std::int64_t k) {
  return tolerance::dot_bound<T>(exact, magnitude, k) + tolerance::dot_reference_error(magnitude, k);
}

// Every row of `out` within the bound of the reference of a, b (given as dense (n, k) values).
template <class T>
::testing::AssertionResult within_dot_bound(const std::vector<double> &out, const std::vector<double> &a,
                                            const std::vector<double> &b, std::int64_t n, std::int64_t k) {
  const auto ref = reference::batched_dot(a, b, n, k);
  if (out.size() != ref.value.size())
    return ::testing::AssertionFailure() << "size " << out.size() << " != " << ref.value.size();
  for (std::int64_t i = 0; i < n; i++) {
    const double err = std::abs(out[i] - ref.value[i]), bound = dot_bound<T>(ref.value[i], ref.magnitude[i], k);
    if (!(err <= bound))
      return ::testing::AssertionFailure()
             << "row " << i << ": got " << out[i] << ", expected " << ref.value[i] << " (error " << err << " > bound "
             << bound << ", sum|ab| " << ref.magnitude[i] << ")";
  }
  return ::testing::AssertionSuccess();
}

struct Shape {
  std::int64_t n, k;
};
// Around the block (32) and chunk (2048) boundaries, odd sizes, one long row, the W1 size.
const std::vector<Shape> kShapes = {{1, 1},    {3, 1},    {1, 31},   {2, 32},   {5, 33},    {7, 63},   {3, 2047},
                                    {3, 2048}, {4, 2049}, {2, 4127}, {9, 6171}, {500, 500}, {17, 333}, {1, 100003}};

template <class T>
void check_dense(const Shape &s, Device device, std::uint32_t seed, double lo = 0.05) {
  SCOPED_TRACE("N=" + std::to_string(s.n) + " K=" + std::to_string(s.k) + " lo=" + std::to_string(lo));
  const auto a = random_array<T, 2>({s.n, s.k}, seed, lo), b = random_array<T, 2>({s.n, s.k}, seed + 1, lo);
  auto out = poisoned<T, 1>({s.n});
  batched_dot(a.view(), b.view(), out.view(), {device});
  EXPECT_TRUE(within_dot_bound<T>(to_doubles(out), to_doubles(a), to_doubles(b), s.n, s.k));
  // Inputs are never modified.
  EXPECT_EQ(to_doubles(a), to_doubles(random_array<T, 2>({s.n, s.k}, seed, lo)));
  EXPECT_EQ(to_doubles(b), to_doubles(random_array<T, 2>({s.n, s.k}, seed + 1, lo)));
}

template <class T>
class DotTyped : public ::testing::Test {};
using ElementTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(DotTyped, ElementTypes);

TYPED_TEST(DotTyped, MatchesReferenceOnCpu) {
  std::uint32_t seed = 10;
  for (const auto &s : kShapes) check_dense<TypeParam>(s, Device::cpu, seed += 2);
  // Mixed signs: cancellation, so the bound is relative to sum |a b|, not to the result.
  for (const auto &s : kShapes) check_dense<TypeParam>(s, Device::cpu, seed += 2, -1.0);
}

TYPED_TEST(DotTyped, MatchesReferenceOnCuda) {
  if (!cuda_available()) GTEST_SKIP() << "no usable GPU: " << cuda_unavailable_reason();
  std::uint32_t seed = 90;
  for (const auto &s : kShapes) check_dense<TypeParam>(s, Device::cuda, seed += 2);
  for (const auto &s : kShapes) check_dense<TypeParam>(s, Device::cuda, seed += 2, -1.0);
  check_dense<TypeParam>({70000, 5}, Device::cuda, seed += 2);  // more rows than a grid's y dimension
}

// K = 10^6: the bound does not grow with K for float32; one serial float sum would miss it.
TYPED_TEST(DotTyped, LongRowsKeepTheBound) {
  check_dense<TypeParam>({3, 1000000}, Device::cpu, 7);
  check_dense<TypeParam>({2, 1000000}, Device::cpu, 8, -1.0);
}

// Short rows run on transposed runs, which split rows narrower than 16 bytes by shuffles and cut
// wider ones into tiles of 16 bytes (and a rest): every length up to the row kernel's.
TYPED_TEST(DotTyped, ManyShortRows) {
  check_dense<TypeParam>({100000, 3}, Device::cpu, 5);
  for (std::int64_t k = 1; k < 32; k++) check_dense<TypeParam>({20011, k}, Device::cpu, std::uint32_t(10 + k));
}

// Both operands transposed views of (K, N) arrays: the column kernel, around its chunk (64) and
// group (1024) sizes, N below and above a vector, and K = 10^6. N < 64 with K * N >= 8192 takes
// the interleaved path (N * ceil(64 / N) lanes, a tail of K * N mod lanes products): N = 1, 3, 4,
// 7, 17, 33, 40.
template <class T>
void check_transposed(const Shape &s, Device device, std::uint32_t seed, double lo = 0.05) {
  SCOPED_TRACE("transposed N=" + std::to_string(s.n) + " K=" + std::to_string(s.k) + " lo=" + std::to_string(lo));
  const auto at = random_array<T, 2>({s.k, s.n}, seed, lo), bt = random_array<T, 2>({s.k, s.n}, seed + 1, lo);
  const View<const T, 2> a(at.data(), {s.n, s.k}, {1, s.n}), b(bt.data(), {s.n, s.k}, {1, s.n});
  auto out = poisoned<T, 1>({s.n});
  batched_dot(a, b, out.view(), {device});
  EXPECT_TRUE(within_dot_bound<T>(to_doubles(out), to_doubles(a), to_doubles(b), s.n, s.k));
}
const std::vector<Shape> kTransposedShapes = {{1, 1},     {3, 1},     {1, 100},    {5, 63},    {5, 64},
                                              {5, 65},    {17, 1023}, {3, 1025},   {40, 2085}, {4, 16411},
                                              {500, 500}, {33, 3000}, {1, 100003}, {7, 50001}};

TYPED_TEST(DotTyped, TransposedMatchesReference) {
  std::uint32_t seed = 300;
  for (const auto &s : kTransposedShapes) check_transposed<TypeParam>(s, Device::cpu, seed += 2);
  for (const auto &s : kTransposedShapes) check_transposed<TypeParam>(s, Device::cpu, seed += 2, -1.0);
  check_transposed<TypeParam>({3, 1000000}, Device::cpu, 9);
}

// Transposed views a few elements into a cache line (as NumPy allocates), over 1 MiB: where a and b
// reach a line together, the columns before it run as a call of their own, bit for bit as from
// copies on a line; b at another place in its line, one call. Within the bound either way.
TYPED_TEST(DotTyped, TransposedViewsOffACacheLine) {
  using T = TypeParam;
  constexpr std::int64_t k = 300, pitch = 1024, n = pitch - 16;  // K rows of (K, N) a whole number of lines apart
  auto a_space = random_array<T, 2>({k + 2, pitch}, 81);         // two rows to spare for an out beside a
  const auto b_space = random_array<T, 2>({k, pitch}, 82);
  const auto view = [&](const Array<T, 2> &space, std::int64_t offset) {
    return View<const T, 2>(space.data() + offset, {n, k}, {1, pitch});
  };
  Array<T, 2> a_copy({k, n}), b_copy({k, n});
  for (std::int64_t a_offset : {1, 3}) {
    for (std::int64_t b_offset : {a_offset, a_offset + 1}) {
      SCOPED_TRACE("a " + std::to_string(a_offset) + ", b " + std::to_string(b_offset) + " elements into a line");
      for (std::int64_t r = 0; r < k; r++) {
        std::copy_n(&a_space(r, a_offset), n, &a_copy(r, 0));
        std::copy_n(&b_space(r, b_offset), n, &b_copy(r, 0));
      }
      auto out = poisoned<T, 1>({n}), aligned = poisoned<T, 1>({n});
      batched_dot(view(a_space, a_offset), view(b_space, b_offset), out.view(), {Device::cpu});
      batched_dot(View<const T, 2>(a_copy.data(), {n, k}, {1, n}), View<const T, 2>(b_copy.data(), {n, k}, {1, n}),
                  aligned.view(), {Device::cpu});
      EXPECT_EQ(0, std::memcmp(out.data(), aligned.data(), sizeof(T) * n));
      EXPECT_TRUE(within_dot_bound<T>(to_doubles(out), to_doubles(view(a_space, a_offset)),
                                      to_doubles(view(b_space, b_offset)), n, k));
    }
  }
  // An out whose first elements are a's last ones (columns after the line), the rest beside a: no
  // part's call sees the overlap, the whole views' check does.
  const auto before = to_doubles(a_space);
  EXPECT_HPIPE_ERROR(
      batched_dot(view(a_space, 1), view(b_space, 1), View<T, 1>(&a_space(k - 1, 1 + n - 3), {n}), {Device::cpu}),
      "out: overlaps input a");
  EXPECT_EQ(to_doubles(a_space), before);
}

TYPED_TEST(DotTyped, TransposedMatchesReferenceOnCuda) {
  if (!cuda_available()) GTEST_SKIP() << "no usable GPU: " << cuda_unavailable_reason();
  std::uint32_t seed = 400;
  for (const auto &s : kTransposedShapes) check_transposed<TypeParam>(s, Device::cuda, seed += 2);
}

// a transposed (K-stride N), b dense; both transposed; a with an innermost stride of 2; a strided
// output whose gaps stay untouched.
TEST(DotViews, StridedAndTransposed) {
  const std::int64_t n = 37, k = 2085;
  const auto a = random_array<float, 2>({n, k}, 3), b = random_array<float, 2>({n, k}, 4);
  Array<float, 2> at({k, n}), bt({k, n}), wide({n, 2 * k});
  for (std::int64_t i = 0; i < n; i++)
    for (std::int64_t j = 0; j < k; j++) {
      at(j, i) = a(i, j);
      bt(j, i) = b(i, j);
      wide(i, 2 * j) = a(i, j);
      wide(i, 2 * j + 1) = std::numeric_limits<float>::quiet_NaN();
    }
  const View<const float, 2> a_t(at.data(), {n, k}, {1, n}), b_t(bt.data(), {n, k}, {1, n});
  const View<const float, 2> a_s(wide.data(), {n, k}, {2 * k, 2});
  const auto av = to_doubles(a), bv = to_doubles(b);

  auto out = poisoned<float, 1>({n});
  batched_dot(a_t, b.view(), out.view(), {Device::cpu});
  EXPECT_TRUE(within_dot_bound<float>(to_doubles(out), av, bv, n, k)) << "a transposed";
  out = poisoned<float, 1>({n});
  batched_dot(a_t, b_t, out.view(), {Device::cpu});
  EXPECT_TRUE(within_dot_bound<float>(to_doubles(out), av, bv, n, k)) << "both transposed";

  auto out_wide = poisoned<float, 1>({3 * n});
  const View<float, 1> out_s(out_wide.data() + 1, {n}, {3});
  batched_dot(a_s, b_t, out_s, {Device::cpu});
  EXPECT_TRUE(within_dot_bound<float>(to_doubles(out_s), av, bv, n, k)) << "strided a and out";
  EXPECT_TRUE(std::isnan(out_wide(0)));
  EXPECT_TRUE(std::isnan(out_wide(2)));
}

// Short rows (fewer products than the row kernel's block) in tasks of transposed runs: many rows
// (several tasks, the last one shorter), b read with an innermost stride of 2 or transposed, and
// a strided out whose gaps stay untouched.
TEST(DotViews, ShortRowsInAnyLayout) {
  const std::int64_t n = 20011, k = 5;
  const auto a = random_array<float, 2>({n, k}, 5, -1.0), b = random_array<float, 2>({n, k}, 6, -1.0);
  Array<float, 2> wide({n, 2 * k}), bt({k, n});
  for (std::int64_t i = 0; i < n; i++)
    for (std::int64_t j = 0; j < k; j++) {
      wide(i, 2 * j) = b(i, j);
      wide(i, 2 * j + 1) = std::numeric_limits<float>::quiet_NaN();
      bt(j, i) = b(i, j);
    }
  const auto av = to_doubles(a), bv = to_doubles(b);
  for (const View<const float, 2> &b_view :
       {View<const float, 2>(wide.data(), {n, k}, {2 * k, 2}), View<const float, 2>(bt.data(), {n, k}, {1, n})}) {
    auto out_wide = poisoned<float, 1>({2 * n});
    const View<float, 1> out(out_wide.data(), {n}, {2});
    batched_dot(a.view(), b_view, out, {Device::cpu});
    EXPECT_TRUE(within_dot_bound<float>(to_doubles(out), av, bv, n, k)) << "b strides " << b_view.stride(0);
    for (std::int64_t i = 0; i < n; i++) ASSERT_TRUE(std::isnan(out_wide(2 * i + 1))) << "gap " << i;
  }
}

TEST(DotErrors, BadArgumentsNameTheArgument) {
  const Options cpu{Device::cpu};
  const auto a = random_array<float, 2>({4, 5}, 1), b = random_array<float, 2>({4, 5}, 2);
  auto out = poisoned<float, 1>({4});
  const auto b_long = random_array<float, 2>({4, 6}, 2);
  EXPECT_HPIPE_ERROR(batched_dot(a.view(), b_long.view(), out.view(), cpu), "batched_dot", "b: expected shape (4, 5)",
                     "got (4, 6)");
  auto out_wrong = poisoned<float, 1>({5});
  EXPECT_HPIPE_ERROR(batched_dot(a.view(), b.view(), out_wrong.view(), cpu), "out: expected shape (4,)",
                     "one value per row", "got (5,)");
  // The output placed over an input.
  auto a_copy = a;
  EXPECT_HPIPE_ERROR(batched_dot(a_copy.view(), b.view(), View<float, 1>(a_copy.data(), {4}), cpu),
                     "out: overlaps input a");
  EXPECT_HPIPE_ERROR(batched_dot(View<const float, 2>(nullptr, {4, 5}), b.view(), out.view(), cpu),
                     "a: data pointer is null");
  for (std::int64_t i = 0; i < out.size(); i++) ASSERT_TRUE(std::isnan(out.data()[i]));
  EXPECT_EQ(to_doubles(a_copy), to_doubles(a));
  // The interleaved path (transposed dense (K, N), N < 64): an out over the last products of a or
  // b, which the kernel's views leave to the tail loop, was accepted and read back as it was written.
  const std::int64_t n = 3, k = 2731, total = n * k;  // 64-lane rows cover 8184 of the 8193 products
  auto both = random_array<float, 1>({2 * total}, 3);
  const View<const float, 2> at(both.data(), {n, k}, {1, n}), bt(both.data() + total, {n, k}, {1, n});
  for (float *place : {both.data() + total - 8, both.data() + 2 * total - 8}) {
    const auto before = to_doubles(both);
    EXPECT_HPIPE_ERROR(batched_dot(at, bt, View<float, 1>(place, {n}), cpu),
                       place < both.data() + total ? "out: overlaps input a" : "out: overlaps input b");
    EXPECT_EQ(to_doubles(both), before);
  }
}

TEST(DotErrors, CudaRequestWithoutGpu) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is usable here; this checks the message where none is";
  const auto a = random_array<float, 2>({2, 3}, 1);
  EXPECT_HPIPE_ERROR(batched_dot(a.view(), a.view(), {Device::cuda}), "batched_dot",
                     "CUDA was requested but CUDA is not usable", cuda_unavailable_reason());
}

}  // namespace
}  // namespace hpipe::test
