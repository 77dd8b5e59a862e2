#include "hpipe/conv1d.h"

#include <algorithm>
#include <string>

#include "call.h"
#include "kernels.h"

namespace hpipe {

using detail::Call;
using detail::shape_string;

namespace {

template <class T>
struct Conv1dKernels;
template <>
struct Conv1dKernels<float> {
  static constexpr auto conv = HPIPE_KERNEL(hpipe_conv1d_f32);
};
template <>
struct Conv1dKernels<double> {
  static constexpr auto conv = HPIPE_KERNEL(hpipe_conv1d_f64);
};

using Shape2 = std::array<std::int64_t, 2>;

// First element of the full convolution that output element 0 is (see conv1d.h).
std::int64_t full_offset(std::int64_t la, std::int64_t lv, ConvMode mode) {
  const std::int64_t m = std::min(la, lv);
  switch (mode) {
    case ConvMode::same: return (m - 1) / 2;
    case ConvMode::valid: return m - 1;
    case ConvMode::full: break;
  }
  return 0;
}

// The mode and the shapes of a (N, La) and of the kernels, v (N, Lv) or, `shared`, (Lv) (v's
// first extent unused), checked before anything is computed from them.
void check_arguments(ConvMode mode, const Shape2 &a, bool shared, const Shape2 &v) {
  if (mode != ConvMode::full && mode != ConvMode::same && mode != ConvMode::valid)
    detail::fail("conv1d", "mode", "must be ConvMode::full, same or valid, got " + std::to_string(int(mode)));
  if (a[0] < 0 || a[1] < 1)  // rows of no elements have no convolution, as in np.convolve
    detail::fail("conv1d", "a", "expected shape (N, La) with La >= 1, got " + shape_string(a));
  if (shared) {
    if (v[1] < 1) detail::fail("conv1d", "v", "expected a kernel of length at least 1, got shape (0,)");
  } else {
    if (v[1] < 1 || v[0] != a[0])
      detail::fail("conv1d", "v",
                   "expected shape (" + std::to_string(a[0]) + ", Lv) with Lv >= 1 (one kernel per row of a), got " +
                       shape_string(v));
  }
}

// `v` is (N, Lv); a shared kernel arrives here with a row stride of 0.
template <class T>
void conv1d_impl(View<const T, 2> a, View<const T, 2> v, bool shared, ConvMode mode, View<T, 2> out,
                 const Options &options) {
  Call call("conv1d", options);
  check_arguments(mode, a.shape(), shared, v.shape());
  const std::int64_t la = a.shape(1), lv = v.shape(1);
  const Shape2 expected{a.shape(0), conv1d_length(la, lv, mode)};
  if (out.shape() != expected)
    call.fail("out", "expected shape " + shape_string(expected) + " for mode " + to_string(mode) + " with La = " +
                         std::to_string(la) + ", Lv = " + std::to_string(lv) + ", got " + shape_string(out.shape()));
  if (const std::int64_t rows = detail::items_per_call(a, v, out); rows < a.shape(0)) {
    detail::check_disjoint("conv1d", "out", out, "a", a);
    detail::check_disjoint("conv1d", "out", out, "v", v);
    return detail::for_each_part(a.shape(0), rows, [&](std::int64_t i, std::int64_t n) {
      conv1d_impl<T>(detail::batch_part(a, i, n), detail::batch_part(v, i, n), shared, mode,
                     detail::batch_part(out, i, n), options);
    });
  }
  // Like np.convolve, the longer operand is the signal and the shorter one the kernel.
  const bool swap = lv > la;
  auto sa = call.input(swap ? "v" : "a", swap ? v : a);
  auto ka = call.input(swap ? "a" : "v", swap ? a : v);
  auto oa = call.output("out", out);
  call.run(Conv1dKernels<T>::conv, sa, ka, static_cast<int>(full_offset(la, lv, mode)), oa);
}

template <class T>
View<const T, 2> broadcast_rows(const View<const T, 1> &v, std::int64_t rows) {
  return View<const T, 2>(v.data(), {rows, v.shape(0)}, {0, v.stride(0)}, v.memory());
}

template <class T>
void conv1d_shared(View<const T, 2> a, View<const T, 1> v, ConvMode mode, View<T, 2> out, const Options &options) {
  conv1d_impl<T>(a, broadcast_rows(v, a.shape(0)), true, mode, out, options);
}

// The allocating forms, for a kernel per row (V is 2-D) or a shared one (1-D).
template <class T, int VRank>
Array<T, 2> conv1d_allocating(View<const T, 2> a, View<const T, VRank> v, ConvMode mode, const Options &options) {
  // The arguments' limits before the allocation (so that a call that would fail allocates nothing).
  detail::check_kernel_buffer<T>("conv1d", "a", detail::one_item(a.shape()));  // larger batches run in parts
  detail::check_kernel_buffer<T>("conv1d", "v", detail::one_item(v.shape()));
  check_arguments(mode, a.shape(), VRank == 1, Shape2{v.shape(0), v.shape(VRank - 1)});
  const std::array<std::int64_t, 2> shape{a.shape(0), conv1d_length(a.shape(1), v.shape(VRank - 1), mode)};
  detail::check_kernel_buffer<T>("conv1d", "out", detail::one_item(shape));
  Array<T, 2> out(shape);
  if constexpr (VRank == 2) {
    conv1d_impl<T>(a, v, false, mode, out.view(), options);
  } else {
    conv1d_shared<T>(a, v, mode, out.view(), options);
  }
  return out;
}

}  // namespace

std::int64_t conv1d_length(std::int64_t la, std::int64_t lv, ConvMode mode) {
  if (la < 1) detail::fail("conv1d_length", "la", "expected at least 1, got " + std::to_string(la));
  if (lv < 1) detail::fail("conv1d_length", "lv", "expected at least 1, got " + std::to_string(lv));
  switch (mode) {
    case ConvMode::same: return std::max(la, lv);
    case ConvMode::valid: return std::max(la, lv) - std::min(la, lv) + 1;
    case ConvMode::full: break;
    default:
      detail::fail("conv1d_length", "mode", "expected ConvMode::full, same or valid, got " + std::to_string(int(mode)));
  }
  std::int64_t length = 0;
  if (__builtin_add_overflow(la, lv - 1, &length))
    detail::fail("conv1d_length", "la",
                 "La + Lv - 1 exceeds 2^63 (La = " + std::to_string(la) + ", Lv = " + std::to_string(lv) + ")");
  return length;
}

const char *to_string(ConvMode mode) {
  switch (mode) {
    case ConvMode::full: return "full";
    case ConvMode::same: return "same";
    case ConvMode::valid: return "valid";
  }
  return "unknown";
}

void conv1d(View<const float, 2> a, View<const float, 2> v, ConvMode mode, View<float, 2> out, const Options &o) {
  conv1d_impl<float>(a, v, false, mode, out, o);
}
void conv1d(View<const double, 2> a, View<const double, 2> v, ConvMode mode, View<double, 2> out, const Options &o) {
  conv1d_impl<double>(a, v, false, mode, out, o);
}
void conv1d(View<const float, 2> a, View<const float, 1> v, ConvMode mode, View<float, 2> out, const Options &o) {
  conv1d_shared<float>(a, v, mode, out, o);
}
void conv1d(View<const double, 2> a, View<const double, 1> v, ConvMode mode, View<double, 2> out, const Options &o) {
  conv1d_shared<double>(a, v, mode, out, o);
}
Array<float, 2> conv1d(View<const float, 2> a, View<const float, 2> v, ConvMode mode, const Options &o) {
  return conv1d_allocating<float, 2>(a, v, mode, o);
}
Array<double, 2> conv1d(View<const double, 2> a, View<const double, 2> v, ConvMode mode, const Options &o) {
  return conv1d_allocating<double, 2>(a, v, mode, o);
}
Array<float, 2> conv1d(View<const float, 2> a, View<const float, 1> v, ConvMode mode, const Options &o) {
  return conv1d_allocating<float, 1>(a, v, mode, o);
}
Array<double, 2> conv1d(View<const double, 2> a, View<const double, 1> v, ConvMode mode, const Options &o) {
  return conv1d_allocating<double, 1>(a, v, mode, o);
}

}  // namespace hpipe
