#include "hpipe/dot.h"

#include <string>

#include "call.h"
#include "hpipe_batched_dot_f32_cpu.h"
#include "hpipe_batched_dot_f64_cpu.h"
#ifdef HPIPE_HAVE_CUDA
#include "hpipe_batched_dot_f32_cuda.h"
#include "hpipe_batched_dot_f64_cuda.h"
#endif
#include "kernels.h"

namespace hpipe {

using detail::Call;
using detail::shape_string;

namespace {

template <class T>
struct DotKernels;
template <>
struct DotKernels<float> {
  static constexpr auto dot = HPIPE_KERNEL(hpipe_batched_dot_f32);
};
template <>
struct DotKernels<double> {
  static constexpr auto dot = HPIPE_KERNEL(hpipe_batched_dot_f64);
};

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
  auto aa = call.input("a", a);
  auto ba = call.input("b", b);
  auto oa = call.output("out", out);
  call.run(DotKernels<T>::dot, aa, ba, oa);
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
