#include "hpipe/dot.h"

#include <string>

#include "call.h"
#include "kernels.h"

namespace hpipe {

using detail::Call;
using detail::shape_string;

namespace {

template <class T>
struct DotKernels;
template <>
struct DotKernels<float> {
  static constexpr auto rows = HPIPE_KERNEL(hpipe_batched_dot_f32);
  static constexpr auto columns = HPIPE_KERNEL(hpipe_batched_dot_columns_f32);
};
template <>
struct DotKernels<double> {
  static constexpr auto rows = HPIPE_KERNEL(hpipe_batched_dot_f64);
  static constexpr auto columns = HPIPE_KERNEL(hpipe_batched_dot_columns_f64);
};

// Rows contiguous along N rather than K: a transposed view of a (K, N) array.
template <class T>
bool column_major(const View<const T, 2> &v) {
  return (v.stride(0) == 1 || v.shape(0) == 1) && v.stride(1) != 1 && v.shape(1) > 1;
}

template <class T>
View<const T, 2> transposed(const View<const T, 2> &v) {
  return View<const T, 2>(v.data(), {v.shape(1), v.shape(0)}, {v.stride(1), v.stride(0)}, v.memory());
}

template <class T>
void dot_impl(View<const T, 2> a, View<const T, 2> b, View<T, 1> out, const Options &options) {
  Call call("batched_dot", options);
  if (a.shape(0) < 1 || a.shape(1) < 1)
    call.fail("a", "expected shape (N, K) with N >= 1 and K >= 1, got " + shape_string(a.shape()));
  if (b.shape() != a.shape())
    call.fail("b", "expected shape " + shape_string(a.shape()) + " (that of a), got " + shape_string(b.shape()));
  const std::array<std::int64_t, 1> rows{a.shape(0)};
  if (out.shape() != rows)
    call.fail("out", "expected shape " + shape_string(rows) + " (one value per row of a), got " +
                         shape_string(out.shape()));
  // Both operands column-major: the column kernel reads them in place. Otherwise the row kernel,
  // which copies any operand whose K stride is not 1.
  if (column_major(a) && column_major(b)) {
    auto aa = call.input("a", transposed(a));
    auto ba = call.input("b", transposed(b));
    auto oa = call.output("out", out);
    call.run(DotKernels<T>::columns, aa, ba, oa);
    return;
  }
  auto aa = call.input("a", a);
  auto ba = call.input("b", b);
  auto oa = call.output("out", out);
  call.run(DotKernels<T>::rows, aa, ba, oa);
}

}  // namespace

#define HPIPE_DOT_DEFINE(T)                                                                     \
  void batched_dot(View<const T, 2> a, View<const T, 2> b, View<T, 1> out, const Options &o) {  \
    dot_impl<T>(a, b, out, o);                                                                  \
  }                                                                                             \
  Array<T, 1> batched_dot(View<const T, 2> a, View<const T, 2> b, const Options &o) {           \
    Array<T, 1> out({a.shape(0)});                                                              \
    dot_impl<T>(a, b, out.view(), o);                                                           \
    return out;                                                                                 \
  }

HPIPE_DOT_DEFINE(float)
HPIPE_DOT_DEFINE(double)
#undef HPIPE_DOT_DEFINE

}  // namespace hpipe
