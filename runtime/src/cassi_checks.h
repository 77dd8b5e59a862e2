// Argument checks the CASSI operators and the reconstructions built on them share: the
// dispersion, shapes, the cube behind a measurement, and binding a shared or per-band mask to a cube.
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "call.h"
#include "hpipe/cassi.h"

namespace hpipe::detail {

inline int axis_code(Axis axis) { return axis == Axis::height ? 1 : 0; }

inline std::string describe(Dispersion d) {
  return "step " + std::to_string(d.step) + " along " + (d.axis == Axis::height ? "height" : "width");
}

// " for a cube of shape (B, C, H, W) with step S along width", for shape messages.
inline std::string of_cube(const std::array<std::int64_t, 4> &cube, Dispersion d) {
  return " for a cube of shape " + shape_string(cube) + " with " + describe(d);
}

inline void check_dispersion(std::string_view op, Dispersion d) {
  if (d.axis != Axis::width && d.axis != Axis::height)
    fail(op, "dispersion", "axis must be Axis::width or Axis::height, got " + std::to_string(int(d.axis)));
  if (std::abs(static_cast<std::int64_t>(d.step)) > (1 << 24))
    fail(op, "dispersion", "|step| must be at most 2^24 pixels, got " + std::to_string(d.step));
}
inline void check_dispersion(const Call &call, Dispersion d) { check_dispersion(call.op(), d); }

// The measurement (B, H', W') of a (B, C, H, W) cube, and the cube of `bands` bands behind a
// measurement, in checked arithmetic: hpipe::Error from `op` naming `name` (the input shape) or the
// bands when the result would overflow, or when the measurement is too small for the bands.
std::array<std::int64_t, 3> measurement_of(std::string_view op, const char *name,
                                           const std::array<std::int64_t, 4> &cube, Dispersion d);
std::array<std::int64_t, 4> cube_of(std::string_view op, const char *name,
                                    const std::array<std::int64_t, 3> &measurement, std::int64_t bands, Dispersion d);

// The measurement shape of cube x, for the output an op allocates: the dispersion, x's extents and
// the kernel's buffer limits are checked first, so that a call that would fail allocates nothing.
template <class T>
std::array<std::int64_t, 3> measurement_to_allocate(std::string_view op, const View<const T, 4> &x, Dispersion d) {
  check_dispersion(op, d);
  check_extents(op, "x", x);
  const auto shape = measurement_of(op, "x", x.shape(), d);
  check_kernel_buffer<T>(op, "y", one_item(shape));  // larger batches run in parts
  return shape;
}

// `why` says where the expected shape comes from: a text, or a callable that makes one, called only
// when the check fails (a call's checks format nothing: of_cube's text cost a small call 10%).
template <class Shape, class V, class Why>
void check_shape(const Call &call, const char *name, const V &view, const Shape &expected, const Why &why) {
  if (view.shape() == expected) return;
  std::string because;
  if constexpr (std::is_invocable_v<Why>)
    because = why();
  else
    because = why;
  call.fail(name, "expected shape " + shape_string(expected) + because + ", got " + shape_string(view.shape()));
}

inline void check_bands(std::string_view op, std::int64_t bands) {
  if (bands < 1) fail(op, "bands", "expected at least 1, got " + std::to_string(bands));
}

// The (B, C, H, W) cube of `bands` bands behind measurement y, for the output an op allocates:
// checked like measurement_to_allocate.
template <class T>
std::array<std::int64_t, 4> cube_behind(std::string_view op, const View<const T, 3> &y, std::int64_t bands,
                                        Dispersion d) {
  check_dispersion(op, d);
  check_bands(op, bands);
  check_extents(op, "y", y);
  const std::array<std::int64_t, 4> cube = cube_of(op, "y", y.shape(), bands, d);
  check_kernel_buffer<T>(op, "x", one_item(cube));  // larger batches run in parts
  return cube;
}

// The mask as (C, H, W) for a cube of `bands` bands of H x W.
template <class T>
View<const T, 3> bind_mask(const Call &call, const Mask<T> &mask, std::int64_t bands, std::int64_t height,
                           std::int64_t width) {
  const View<const T, 3> &m = mask.view();
  if (mask.per_band()) {
    check_shape(call, "mask", m, std::array<std::int64_t, 3>{bands, height, width},
                " (a per-band mask is (C, H, W) of the cube)");
    return m;
  }
  if (m.shape(1) != height || m.shape(2) != width)
    call.fail("mask", "expected shape " + shape_string(std::array<std::int64_t, 2>{height, width}) +
                          " (H, W) of the cube, got " +
                          shape_string(std::array<std::int64_t, 2>{m.shape(1), m.shape(2)}));
  return View<const T, 3>(m.data(), {bands, height, width}, {0, m.stride(1), m.stride(2)}, m.memory());
}

}  // namespace hpipe::detail
