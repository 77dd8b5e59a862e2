// hpipe/view.h and Array: shape arithmetic that does not fit in int64 is an Error naming the shape,
// never a wrapped size (UBSan flagged View::size, dense_strides and Array's count).
#include <gtest/gtest.h>

#include <string>

#include "test_util.h"

namespace hpipe::test {
namespace {

constexpr std::int64_t k2to32 = std::int64_t(1) << 32;

template <class F>
void expect_error(F &&f, const std::string &part) {
  try {
    f();
    ADD_FAILURE() << "no hpipe::Error; expected one containing " << part;
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what() << " lacks " << part;
  }
}

TEST(ViewLimits, SizeThatOverflowsIsAnError) {
  float x = 0;
  const View<float, 3> v(&x, {k2to32, k2to32, 1}, {0, 0, 0});  // a broadcast view: any extents
  expect_error([&] { return v.size(); }, "view of shape (4294967296, 4294967296, 1): more than 2^63 elements");
  const View<float, 2> fits(&x, {k2to32, k2to32 / 2 - 1}, {0, 0});
  EXPECT_EQ(fits.size(), k2to32 * (k2to32 / 2 - 1));
}

TEST(ViewLimits, DenseStridesThatOverflowAreAnError) {
  float x = 0;
  expect_error([&] { return View<float, 3>(&x, {1, k2to32, k2to32}); }, "view of shape (1, 4294967296, 4294967296)");
  // The outermost extent enters no stride.
  const View<float, 2> v(&x, {INT64_MAX, 3});
  EXPECT_EQ(v.strides(), (std::array<std::int64_t, 2>{3, 1}));
}

TEST(ArrayLimits, ShapesNoMemoryHoldsAreAnErrorNotAnEmptyArray) {
  expect_error([] { return Array<float, 2>({k2to32, k2to32}); }, "Array of shape (4294967296, 4294967296)");
  expect_error([] { return Array<double, 1>({INT64_MAX / 4}); }, "more bytes than memory can address");
  expect_error([] { return Array<float, 2>({-1, 5}); }, "Array of shape (-1, 5): every extent must be at least 0");
  const Array<float, 2> empty({0, 7});
  EXPECT_EQ(empty.size(), 0);
  EXPECT_EQ(empty.shape(1), 7);
}

}  // namespace
}  // namespace hpipe::test
