// Test helpers shared by every kernel test: seeded random arrays, NaN-poisoned outputs, the named
// tolerances (reference/tolerances.h) and an element-wise comparison that reports the worst element.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "hpipe/hpipe.h"
#include "random_array.h"
#include "reference/tolerances.h"

namespace hpipe::test {

using tolerance::epsilon;
using tolerance::Tolerance;

// An output array filled with NaN, so any element a kernel fails to write fails the comparison.
template <class T, int R>
Array<T, R> poisoned(const typename Array<T, R>::Extents &shape) {
  Array<T, R> a(shape);
  for (std::int64_t i = 0; i < a.size(); i++) a.data()[i] = std::numeric_limits<T>::quiet_NaN();
  return a;
}

// Copies any host view (any strides) into a dense vector of doubles in C order.
template <class T, int R>
std::vector<double> to_doubles(const View<T, R> &v) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(v.size()));
  std::array<std::int64_t, R> idx{};
  for (std::int64_t n = 0; n < v.size(); n++) {
    std::int64_t offset = 0;
    for (int d = 0; d < R; d++) offset += idx[d] * v.stride(d);
    out.push_back(static_cast<double>(v.data()[offset]));
    for (int d = R - 1; d >= 0; d--) {
      if (++idx[d] < v.shape(d)) break;
      idx[d] = 0;
    }
  }
  return out;
}
template <class T, int R>
std::vector<double> to_doubles(const Array<T, R> &a) {
  return to_doubles(a.view());
}

// Asserts every element is within tolerance (NaN never is); reports the worst one.
inline ::testing::AssertionResult all_near(const std::vector<double> &actual, const std::vector<double> &expected,
                                           Tolerance tol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << "size " << actual.size() << " != expected " << expected.size();
  std::size_t bad = 0, worst = 0;
  double worst_excess = -1;
  for (std::size_t i = 0; i < actual.size(); i++) {
    const double limit = tol.limit(expected[i]);
    const double err = std::abs(actual[i] - expected[i]);
    if (!(err <= limit)) {
      bad++;
      const double excess = std::isnan(err) ? std::numeric_limits<double>::infinity() : err - limit;
      if (excess > worst_excess) worst_excess = excess, worst = i;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << actual.size() << " elements out of tolerance (abs "
                                       << tol.abs << ", rel " << tol.rel << "); worst at flat index " << worst
                                       << ": got " << actual[worst] << ", expected " << expected[worst];
}

// Expects `statement` to throw hpipe::Error whose message contains every one of `parts`.
#define EXPECT_HPIPE_ERROR(statement, ...)                                           \
  do {                                                                               \
    try {                                                                            \
      statement;                                                                     \
      ADD_FAILURE() << "expected hpipe::Error from " #statement;                     \
    } catch (const ::hpipe::Error &e) {                                              \
      for (const std::string part : std::initializer_list<std::string>{__VA_ARGS__}) \
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos)               \
            << "message \"" << e.what() << "\" lacks \"" << part << "\"";            \
    }                                                                                \
  } while (0)

}  // namespace hpipe::test
