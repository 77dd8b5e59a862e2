// Batched 1-D convolution against a row-by-row np.convolve reference: every mode, per-row and
// shared kernels, unrolled (2..9 taps) and generic tap counts, La < Lv, length 1, strided views,
// N = 1 and N = 10^5, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "reference/conv1d_reference.h"
#include "test_util.h"

namespace hpipe::test {
namespace {

constexpr ConvMode kModes[] = {ConvMode::full, ConvMode::same, ConvMode::valid};

struct Problem {
  std::int64_t n, la, lv;
};
const std::vector<Problem> kProblems = {
    {1, 1, 1},   {3, 1, 1},    {2, 5, 1},   {4, 1, 6},    {5, 5, 7},   // W3 case A: La < Lv
    {3, 9, 2},   {7, 9, 3},    {2, 13, 4},  {3, 17, 5},   {6, 9, 6},   // unrolled taps
    {100, 9, 6}, {3, 40, 8},   {5, 9, 9},   {2, 8, 9},    {3, 9, 10},  // W3 case B, first generic
    {2, 33, 31}, {3, 100, 64}, {2, 70, 65}, {1, 1000, 7}, {2, 3, 64},  // long kernels, long signals
    {3, 64, 64}, {4, 65, 2},   {1, 2, 3},   {2, 16, 16}};

std::string describe(const Problem &p, ConvMode mode, bool shared) {
  std::ostringstream s;
  s << "N=" << p.n << " La=" << p.la << " Lv=" << p.lv << " mode=" << to_string(mode)
    << (shared ? " shared kernel" : " per-row kernels");
  return s.str();
}

template <class T>
void check_problem(const Problem &p, Device device, std::uint32_t seed, double lo = 0.05) {
  const auto a = random_array<T, 2>({p.n, p.la}, seed, lo);
  const auto v_rows = random_array<T, 2>({p.n, p.lv}, seed + 1, lo);
  const auto v_shared = random_array<T, 1>({p.lv}, seed + 2, lo);
  const std::int64_t m = std::min(p.la, p.lv);
  const Tolerance tol = lo > 0 ? tolerance::conv1d_positive<T>(m) : tolerance::conv1d_signed<T>(m);
  for (ConvMode mode : kModes) {
    for (bool shared : {false, true}) {
      SCOPED_TRACE(describe(p, mode, shared));
      auto out = poisoned<T, 2>({p.n, conv1d_length(p.la, p.lv, mode)});
      if (shared) {
        conv1d(a.view(), v_shared.view(), mode, out.view(), {device});
      } else {
        conv1d(a.view(), v_rows.view(), mode, out.view(), {device});
      }
      const auto expected = reference::batched_convolve(
          to_doubles(a), shared ? to_doubles(v_shared) : to_doubles(v_rows), p.n, p.la, p.lv, shared, to_string(mode));
      EXPECT_TRUE(all_near(to_doubles(out), expected, tol));
    }
  }
  // Inputs are never modified.
  EXPECT_EQ(to_doubles(a), to_doubles(random_array<T, 2>({p.n, p.la}, seed, lo)));
  EXPECT_EQ(to_doubles(v_rows), to_doubles(random_array<T, 2>({p.n, p.lv}, seed + 1, lo)));
}

template <class T>
class Conv1dTyped : public ::testing::Test {};
using ElementTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Conv1dTyped, ElementTypes);

TYPED_TEST(Conv1dTyped, MatchesNumpyOnCpu) {
  std::uint32_t seed = 20;
  for (const auto &p : kProblems) check_problem<TypeParam>(p, Device::cpu, seed += 3);
  for (const auto &p : kProblems) check_problem<TypeParam>(p, Device::cpu, seed += 3, -1.0);
}

TYPED_TEST(Conv1dTyped, MatchesNumpyOnCuda) {
  if (!cuda_available()) GTEST_SKIP() << "no usable GPU: " << cuda_unavailable_reason();
  std::uint32_t seed = 200;
  for (const auto &p : kProblems) check_problem<TypeParam>(p, Device::cuda, seed += 3);
  // More row blocks than a CUDA grid's y dimension holds (65535).
  check_problem<TypeParam>({600000, 3, 2}, Device::cuda, seed += 3);
}

// The large W3 batch: 10^5 rows of 9 against 7 taps, per-row kernels, every mode.
TYPED_TEST(Conv1dTyped, HundredThousandRows) { check_problem<TypeParam>({100000, 9, 7}, Device::cpu, 77); }

// Batches of at least one short-row task (schedules/conv1d.h: short_row_length 32,
// short_rows_per_task 1024) take their own loop nest: exactly one task, one row over, generic and
// unrolled taps, La < Lv, and full rows of 32 and 33 outputs (just inside and outside the limit).
TYPED_TEST(Conv1dTyped, ShortRowBatches) {
  std::uint32_t seed = 500;
  for (const Problem &p : {Problem{1024, 9, 7}, Problem{1025, 3, 12}, Problem{3001, 20, 13}, Problem{2049, 24, 9},
                           Problem{1100, 25, 9}, Problem{1500, 1, 1}})
    check_problem<TypeParam>(p, Device::cpu, seed += 3, -1.0);
}

// Hand-checked values: np.convolve([1, 2, 3], [0, 1, 0.5]) = [0, 1, 2.5, 4, 1.5];
// same -> [1, 2.5, 4]; valid -> [2.5]. With the operands swapped the results are the same.
TEST(Conv1dValues, SmallExampleLikeNumpy) {
  Array<double, 2> a({1, 3}), v({1, 3});
  a(0, 0) = 1, a(0, 1) = 2, a(0, 2) = 3;
  v(0, 0) = 0, v(0, 1) = 1, v(0, 2) = 0.5;
  EXPECT_EQ(to_doubles(conv1d(a.view(), v.view(), ConvMode::full, {Device::cpu})),
            (std::vector<double>{0, 1, 2.5, 4, 1.5}));
  EXPECT_EQ(to_doubles(conv1d(a.view(), v.view(), ConvMode::same, {Device::cpu})), (std::vector<double>{1, 2.5, 4}));
  EXPECT_EQ(to_doubles(conv1d(a.view(), v.view(), ConvMode::valid, {Device::cpu})), (std::vector<double>{2.5}));
  // np.convolve([1, 2, 3, 4], [1, -1], "same") = [1, 1, 1, 1] (first element of full kept).
  Array<double, 2> b({1, 4});
  Array<double, 1> d({2});
  b(0, 0) = 1, b(0, 1) = 2, b(0, 2) = 3, b(0, 3) = 4, d(0) = 1, d(1) = -1;
  EXPECT_EQ(to_doubles(conv1d(b.view(), d.view(), ConvMode::same, {Device::cpu})), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(conv1d_length(5, 7, ConvMode::same), 7);
  EXPECT_EQ(conv1d_length(5, 7, ConvMode::valid), 3);
  EXPECT_EQ(conv1d_length(5, 7, ConvMode::full), 11);
  // Lengths below 1 are errors, as the shape helpers of the other families give them (they gave 2, 9, 3).
  EXPECT_HPIPE_ERROR(conv1d_length(0, 3, ConvMode::full), "conv1d_length: la: expected at least 1, got 0");
  EXPECT_HPIPE_ERROR(conv1d_length(-5, 3, ConvMode::valid), "conv1d_length: la: expected at least 1, got -5");
  EXPECT_HPIPE_ERROR(conv1d_length(3, 0, ConvMode::same), "conv1d_length: lv: expected at least 1, got 0");
  EXPECT_HPIPE_ERROR(conv1d_length(3, 2, static_cast<ConvMode>(7)), "conv1d_length: mode: expected ConvMode::full");
}

// a with an innermost stride of 2 (copied densely), a transposed view, kernels with a row
// stride larger than their length, and a strided output whose gaps stay untouched.
TEST(Conv1dViews, StridedInputsAndOutputs) {
  const Problem p{6, 11, 4};
  const auto a = random_array<float, 2>({p.n, p.la}, 3);
  const auto v = random_array<float, 2>({p.n, p.lv}, 4);
  Array<float, 2> wide({p.n, 2 * p.la}), at({p.la, p.n}), v_pad({p.n, p.lv + 3});
  for (std::int64_t i = 0; i < p.n; i++) {
    for (std::int64_t x = 0; x < p.la; x++) wide(i, 2 * x) = at(x, i) = a(i, x);
    for (std::int64_t j = 0; j < p.lv; j++) v_pad(i, j) = v(i, j);
  }
  const View<const float, 2> a_strided(wide.data(), {p.n, p.la}, {2 * p.la, 2});
  const View<const float, 2> a_t(at.data(), {p.n, p.la}, {1, p.n});
  const View<const float, 2> v_rows(v_pad.data(), {p.n, p.lv}, {p.lv + 3, 1});
  for (ConvMode mode : kModes) {
    SCOPED_TRACE(to_string(mode));
    const std::int64_t lo = conv1d_length(p.la, p.lv, mode);
    const auto expected =
        reference::batched_convolve(to_doubles(a), to_doubles(v), p.n, p.la, p.lv, false, to_string(mode));
    auto out_wide = poisoned<float, 2>({p.n, 2 * lo});
    const View<float, 2> out(out_wide.data() + 1, {p.n, lo}, {2 * lo, 2});
    conv1d(a_strided, v_rows, mode, out, {Device::cpu});
    EXPECT_TRUE(all_near(to_doubles(out), expected, tolerance::conv1d_positive<float>(p.lv)));
    EXPECT_TRUE(std::isnan(out_wide(0, 0)));
    auto dense = poisoned<float, 2>({p.n, lo});
    conv1d(a_t, v_rows, mode, dense.view(), {Device::cpu});
    EXPECT_TRUE(all_near(to_doubles(dense), expected, tolerance::conv1d_positive<float>(p.lv)));
  }
}

// Innermost strides of 0 (a torch gradient expanded from one value per row, or from a scalar) are
// read through the runtime's dense copy.
TEST(Conv1dViews, ExpandedInputs) {
  const Problem p{5, 9, 3};
  const auto column = random_array<float, 1>({p.n}, 5);
  const auto v = random_array<float, 2>({p.n, p.lv}, 6);
  Array<float, 2> a({p.n, p.la}), a_scalar({p.n, p.la});
  for (std::int64_t i = 0; i < p.n; i++)
    for (std::int64_t x = 0; x < p.la; x++) a(i, x) = column(i), a_scalar(i, x) = column(0);
  const View<const float, 2> per_row(column.data(), {p.n, p.la}, {1, 0}), scalar(column.data(), {p.n, p.la}, {0, 0});
  for (const auto &[view, dense] : {std::pair{per_row, &a}, std::pair{scalar, &a_scalar}}) {
    const auto expected =
        reference::batched_convolve(to_doubles(*dense), to_doubles(v), p.n, p.la, p.lv, false, "full");
    auto out = poisoned<float, 2>({p.n, conv1d_length(p.la, p.lv, ConvMode::full)});
    conv1d(view, v.view(), ConvMode::full, out.view(), {Device::cpu});
    EXPECT_TRUE(all_near(to_doubles(out), expected, tolerance::conv1d_positive<float>(p.lv)));
  }
}

TEST(Conv1dErrors, BadArgumentsNameTheArgument) {
  const Options cpu{Device::cpu};
  const auto a = random_array<float, 2>({4, 9}, 1);
  const auto v = random_array<float, 2>({4, 3}, 2);
  auto out = poisoned<float, 2>({4, 11});
  const auto v_rows = random_array<float, 2>({3, 3}, 2);
  EXPECT_HPIPE_ERROR(conv1d(a.view(), v_rows.view(), ConvMode::full, out.view(), cpu), "conv1d",
                     "v: expected shape (4, Lv)", "one kernel per row", "got (3, 3)");
  auto out_wrong = poisoned<float, 2>({4, 10});
  EXPECT_HPIPE_ERROR(conv1d(a.view(), v.view(), ConvMode::full, out_wrong.view(), cpu),
                     "out: expected shape (4, 11) for mode full with La = 9, Lv = 3", "got (4, 10)");
  EXPECT_HPIPE_ERROR(conv1d(a.view(), v.view(), ConvMode::valid, out.view(), cpu), "out: expected shape (4, 7)",
                     "mode valid");
  const Array<float, 2> empty_a({4, 0}), empty_v({4, 0});
  const Array<float, 1> empty_shared({0});
  EXPECT_HPIPE_ERROR(conv1d(empty_a.view(), v.view(), ConvMode::full, cpu), "a: expected shape (N, La)", "La >= 1",
                     "got (4, 0)");
  EXPECT_HPIPE_ERROR(conv1d(a.view(), empty_v.view(), ConvMode::full, cpu), "v:", "Lv >= 1", "got (4, 0)");
  EXPECT_HPIPE_ERROR(conv1d(a.view(), empty_shared.view(), ConvMode::same, cpu), "v:", "at least 1");
  EXPECT_HPIPE_ERROR(conv1d(a.view(), v.view(), static_cast<ConvMode>(9), cpu), "mode", "got 9");
  // The output placed over an input (a's memory, and the kernel's).
  auto a_copy = a;
  EXPECT_HPIPE_ERROR(conv1d(a_copy.view(), v.view(), ConvMode::valid, View<float, 2>(a_copy.data(), {4, 7}), cpu),
                     "out: overlaps input a");
  Array<float, 1> shared_memory({40});
  EXPECT_HPIPE_ERROR(conv1d(a.view(), View<const float, 2>(shared_memory.data(), {4, 3}), ConvMode::valid,
                            View<float, 2>(shared_memory.data() + 5, {4, 7}), cpu),
                     "out: overlaps input v");
  Array<float, 2> big({8, 11});
  EXPECT_HPIPE_ERROR(conv1d(View<const float, 2>(big.data(), {4, 9}), v.view(), ConvMode::full,
                            View<float, 2>(big.data() + 30, {4, 11}), cpu),
                     "out: overlaps input a");
  for (std::int64_t i = 0; i < out.size(); i++) ASSERT_TRUE(std::isnan(out.data()[i]));
  EXPECT_EQ(to_doubles(a_copy), to_doubles(a));
}

TEST(Conv1dErrors, CudaRequestWithoutGpu) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is usable here; this checks the message where none is";
  const auto a = random_array<float, 2>({2, 3}, 1);
  EXPECT_HPIPE_ERROR(conv1d(a.view(), a.view(), ConvMode::full, {Device::cuda}), "conv1d",
                     "CUDA was requested but CUDA is not usable", cuda_unavailable_reason());
}

}  // namespace
}  // namespace hpipe::test
