#include "hpipe/cassi.h"

#include <cstdlib>
#include <string>

#include "call.h"
#include "cassi_checks.h"
#include "kernels.h"

namespace hpipe {

using detail::axis_code;
using detail::batch_part;
using detail::bind_mask;
using detail::Call;
using detail::check_bands;
using detail::check_dispersion;
using detail::check_shape;
using detail::cube_behind;
using detail::describe;
using detail::of_cube;
using detail::shape_string;

namespace {

template <class T>
struct CassiKernels;

#define HPIPE_CASSI_KERNELS(T, suffix)                                                          \
  template <>                                                                                   \
  struct CassiKernels<T> {                                                                      \
    static constexpr auto forward = HPIPE_KERNEL(hpipe_cassi_forward_##suffix);                 \
    static constexpr auto adjoint = HPIPE_STREAMING_KERNEL(hpipe_cassi_adjoint_##suffix);       \
    static constexpr auto phi = HPIPE_KERNEL(hpipe_cassi_phi_##suffix);                         \
    static constexpr auto pinv = HPIPE_STREAMING_KERNEL(hpipe_cassi_pinv_##suffix);             \
    static constexpr auto pinv_alpha = HPIPE_STREAMING_KERNEL(hpipe_cassi_pinv_alpha_##suffix); \
    static constexpr auto shift = HPIPE_KERNEL(hpipe_cassi_shift_##suffix);                     \
    static constexpr auto shift_back = HPIPE_STREAMING_KERNEL(hpipe_cassi_shift_back_##suffix); \
  };
HPIPE_CASSI_KERNELS(float, f32)
HPIPE_CASSI_KERNELS(double, f64)
#undef HPIPE_CASSI_KERNELS

using Shape3 = std::array<std::int64_t, 3>;
using Shape4 = std::array<std::int64_t, 4>;

// Forward-like ops: a cube in, a measurement out (the mask is optional for shift).
template <class T, class K>
void run_cube_to_measurement(const char *op, const K &kernel, View<const T, 4> x, const Mask<T> &mask, Dispersion d,
                             View<T, 3> y, const Options &options) {
  Call call(op, options);
  check_dispersion(call, d);
  const auto m = bind_mask(call, mask, x.shape(1), x.shape(2), x.shape(3));
  check_shape(call, "y", y, detail::measurement_of(call.op(), "x", x.shape(), d),
              [&] { return of_cube(x.shape(), d); });
  if (const std::int64_t images = detail::items_per_call(x, y); images < x.shape(0)) {
    detail::check_disjoint(op, "y", y, "x", x);
    detail::check_disjoint(op, "y", y, "mask", m);
    return detail::for_each_part(x.shape(0), images, [&](std::int64_t b, std::int64_t n) {
      run_cube_to_measurement<T>(op, kernel, batch_part(x, b, n), mask, d, batch_part(y, b, n), options);
    });
  }
  auto xa = call.input("x", x);
  auto ma = call.input("mask", m);
  auto ya = call.output("y", y);
  if (x.size() == 0) return call.run_filled(0);  // a cube of no columns (rows): sums of no terms
  call.run(kernel, xa, ma, d.step, axis_code(d.axis), ya);
}

// Adjoint-like ops: a measurement in, a cube out.
template <class T, class K>
void run_measurement_to_cube(const char *op, const K &kernel, View<const T, 3> y, const Mask<T> &mask, Dispersion d,
                             View<T, 4> x, const Options &options) {
  Call call(op, options);
  check_dispersion(call, d);
  const auto m = bind_mask(call, mask, x.shape(1), x.shape(2), x.shape(3));
  check_shape(call, "y", y, detail::measurement_of(call.op(), "x", x.shape(), d),
              [&] { return of_cube(x.shape(), d) + " (the output x)"; });
  if (const std::int64_t images = detail::items_per_call(x, y); images < x.shape(0)) {
    detail::check_disjoint(op, "x", x, "y", y);
    detail::check_disjoint(op, "x", x, "mask", m);
    return detail::for_each_part(x.shape(0), images, [&](std::int64_t b, std::int64_t n) {
      run_measurement_to_cube<T>(op, kernel, batch_part(y, b, n), mask, d, batch_part(x, b, n), options);
    });
  }
  auto ya = call.input("y", y);
  auto ma = call.input("mask", m);
  auto xa = call.output("x", x);
  call.run(kernel, ya, ma, d.step, axis_code(d.axis), xa);
}

template <class T>
void shift_impl(const char *op, View<const T, 4> in, Dispersion d, View<T, 4> out, const Options &options, bool back) {
  Call call(op, options);
  check_dispersion(call, d);
  const Shape4 &cube = back ? out.shape() : in.shape();
  const Shape3 meas = detail::measurement_of(call.op(), back ? "x" : "shifted", cube, d);
  const Shape4 shifted{cube[0], cube[1], meas[1], meas[2]};
  check_shape(call, back ? "shifted" : "x", in, back ? shifted : cube,
              [&] { return back ? of_cube(cube, d) + " (the output x)" : std::string(); });
  check_shape(call, back ? "x" : "shifted", out, back ? cube : shifted,
              [&] { return back ? std::string() : of_cube(cube, d); });
  if (const std::int64_t images = detail::items_per_call(in, out); images < in.shape(0)) {
    detail::check_disjoint(op, back ? "x" : "shifted", out, back ? "shifted" : "x", in);
    return detail::for_each_part(in.shape(0), images, [&](std::int64_t b, std::int64_t n) {
      shift_impl<T>(op, batch_part(in, b, n), d, batch_part(out, b, n), options, back);
    });
  }
  auto ia = call.input(back ? "shifted" : "x", in);
  auto oa = call.output(back ? "x" : "shifted", out);
  if (!back && in.size() == 0) return call.run_filled(0);  // a cube of no columns (rows): padding only
  if (back) {
    call.run(CassiKernels<T>::shift_back, ia, d.step, axis_code(d.axis), oa);
  } else {
    call.run(CassiKernels<T>::shift, ia, d.step, axis_code(d.axis), oa);
  }
}

template <class T>
void phi_impl(const Mask<T> &mask, std::int64_t bands, Dispersion d, View<T, 2> phi, const Options &options) {
  Call call("cassi_phi", options);
  check_dispersion(call, d);
  check_bands("cassi_phi", bands);
  const auto &mv = mask.view();
  const auto m = bind_mask(call, mask, mask.per_band() ? mv.shape(0) : bands, mv.shape(1), mv.shape(2));
  if (mask.per_band() && mv.shape(0) != bands)
    call.fail("mask", "has " + std::to_string(mv.shape(0)) + " bands but bands = " + std::to_string(bands));
  const Shape3 meas = detail::measurement_of(call.op(), "bands", {1, bands, mv.shape(1), mv.shape(2)}, d);
  check_shape(call, "phi", phi, std::array<std::int64_t, 2>{meas[1], meas[2]}, [&] {
    return " (H', W') for a mask of " + std::to_string(mv.shape(1)) + " x " + std::to_string(mv.shape(2)) + ", " +
           std::to_string(bands) + " bands, " + describe(d);
  });
  auto ma = call.input("mask", m);
  auto pa = call.output("phi", phi);
  if (mv.size() == 0) return call.run_filled(1);  // a mask of no columns (rows): sums of no terms, 0 -> 1
  call.run(CassiKernels<T>::phi, ma, d.step, axis_code(d.axis), pa);
}

template <class T, class K>
Array<T, 4> allocate_cube(const char *op, const K &kernel, View<const T, 3> y, const Mask<T> &mask, std::int64_t bands,
                          Dispersion d, const Options &options) {
  Array<T, 4> x(cube_behind(op, y, bands, d));
  run_measurement_to_cube<T>(op, kernel, y, mask, d, x.view(), options);
  return x;
}

template <class T>
Array<T, 3> allocate_measurement(View<const T, 4> x, const Mask<T> &mask, Dispersion d, const Options &options) {
  Array<T, 3> y(detail::measurement_to_allocate("cassi_forward", x, d));
  run_cube_to_measurement<T>("cassi_forward", CassiKernels<T>::forward, x, mask, d, y.view(), options);
  return y;
}

}  // namespace

namespace detail {

namespace {
// (bands - 1) |step|, or an error naming `name` when it does not fit in 64 bits.
std::int64_t spread_of(std::string_view op, const char *name, std::int64_t bands, Dispersion d) {
  std::int64_t spread = 0;
  if (__builtin_mul_overflow(bands - 1, std::abs(static_cast<std::int64_t>(d.step)), &spread))
    fail(op, name, std::to_string(bands) + " bands with " + describe(d) + " displace the last band past 2^63 pixels");
  return spread;
}
}  // namespace

Shape3 measurement_of(std::string_view op, const char *name, const Shape4 &cube, Dispersion d) {
  if (cube[1] < 1) fail(op, name, "expected a cube of at least 1 band, got shape " + shape_string(cube));
  const std::int64_t spread = spread_of(op, name, cube[1], d);
  Shape3 meas{cube[0], cube[2], cube[3]};
  std::int64_t &grown = meas[d.axis == Axis::height ? 1 : 2];
  if (__builtin_add_overflow(grown, spread, &grown))
    fail(op, name,
         "the measurement of a cube of shape " + shape_string(cube) + " with " + describe(d) +
             " would be wider than 2^63 pixels");
  return meas;
}

Shape4 cube_of(std::string_view op, const char *name, const Shape3 &measurement, std::int64_t bands, Dispersion d) {
  const std::int64_t spread = spread_of(op, "bands", bands, d);
  Shape4 cube{measurement[0], bands, measurement[1], measurement[2]};
  std::int64_t &shrunk = cube[d.axis == Axis::height ? 2 : 3];
  if (__builtin_sub_overflow(shrunk, spread, &shrunk) || shrunk < 0)  // 0: the cube of no columns forward gives
    fail(op, name,
         "shape " + shape_string(measurement) + " is too small for " + std::to_string(bands) + " bands with " +
             describe(d));
  return cube;
}

}  // namespace detail

Shape3 cassi_measurement_shape(const Shape4 &cube, Dispersion d) {
  detail::check_dispersion("cassi_measurement_shape", d);
  detail::check_extents("cassi_measurement_shape", "cube", 4, cube.data());
  return detail::measurement_of("cassi_measurement_shape", "cube", cube, d);
}

Shape4 cassi_cube_shape(const Shape3 &measurement, std::int64_t bands, Dispersion d) {
  detail::check_dispersion("cassi_cube_shape", d);
  detail::check_bands("cassi_cube_shape", bands);
  detail::check_extents("cassi_cube_shape", "measurement", 3, measurement.data());
  return detail::cube_of("cassi_cube_shape", "measurement", measurement, bands, d);
}

// The public overloads: float32 and float64 of each op.
void cassi_forward(View<const float, 4> x, const Mask<float> &mask, Dispersion d, View<float, 3> y, const Options &o) {
  run_cube_to_measurement<float>("cassi_forward", CassiKernels<float>::forward, x, mask, d, y, o);
}
void cassi_forward(View<const double, 4> x, const Mask<double> &mask, Dispersion d, View<double, 3> y,
                   const Options &o) {
  run_cube_to_measurement<double>("cassi_forward", CassiKernels<double>::forward, x, mask, d, y, o);
}
void cassi_adjoint(View<const float, 3> y, const Mask<float> &mask, Dispersion d, View<float, 4> x, const Options &o) {
  run_measurement_to_cube<float>("cassi_adjoint", CassiKernels<float>::adjoint, y, mask, d, x, o);
}
void cassi_adjoint(View<const double, 3> y, const Mask<double> &mask, Dispersion d, View<double, 4> x,
                   const Options &o) {
  run_measurement_to_cube<double>("cassi_adjoint", CassiKernels<double>::adjoint, y, mask, d, x, o);
}
void cassi_phi(const Mask<float> &mask, std::int64_t bands, Dispersion d, View<float, 2> phi, const Options &o) {
  phi_impl<float>(mask, bands, d, phi, o);
}
void cassi_phi(const Mask<double> &mask, std::int64_t bands, Dispersion d, View<double, 2> phi, const Options &o) {
  phi_impl<double>(mask, bands, d, phi, o);
}
void cassi_pinv(View<const float, 3> y, const Mask<float> &mask, Dispersion d, View<float, 4> x, const Options &o) {
  run_measurement_to_cube<float>("cassi_pinv", CassiKernels<float>::pinv, y, mask, d, x, o);
}
void cassi_pinv(View<const double, 3> y, const Mask<double> &mask, Dispersion d, View<double, 4> x, const Options &o) {
  run_measurement_to_cube<double>("cassi_pinv", CassiKernels<double>::pinv, y, mask, d, x, o);
}
void cassi_pinv_alpha(View<const float, 3> y, const Mask<float> &mask, Dispersion d, View<float, 4> x,
                      const Options &o) {
  run_measurement_to_cube<float>("cassi_pinv_alpha", CassiKernels<float>::pinv_alpha, y, mask, d, x, o);
}
void cassi_pinv_alpha(View<const double, 3> y, const Mask<double> &mask, Dispersion d, View<double, 4> x,
                      const Options &o) {
  run_measurement_to_cube<double>("cassi_pinv_alpha", CassiKernels<double>::pinv_alpha, y, mask, d, x, o);
}
void cassi_shift(View<const float, 4> x, Dispersion d, View<float, 4> shifted, const Options &o) {
  shift_impl<float>("cassi_shift", x, d, shifted, o, false);
}
void cassi_shift(View<const double, 4> x, Dispersion d, View<double, 4> shifted, const Options &o) {
  shift_impl<double>("cassi_shift", x, d, shifted, o, false);
}
void cassi_shift_back(View<const float, 4> shifted, Dispersion d, View<float, 4> x, const Options &o) {
  shift_impl<float>("cassi_shift_back", shifted, d, x, o, true);
}
void cassi_shift_back(View<const double, 4> shifted, Dispersion d, View<double, 4> x, const Options &o) {
  shift_impl<double>("cassi_shift_back", shifted, d, x, o, true);
}
Array<float, 3> cassi_forward(View<const float, 4> x, const Mask<float> &mask, Dispersion d, const Options &o) {
  return allocate_measurement<float>(x, mask, d, o);
}
Array<double, 3> cassi_forward(View<const double, 4> x, const Mask<double> &mask, Dispersion d, const Options &o) {
  return allocate_measurement<double>(x, mask, d, o);
}
Array<float, 4> cassi_adjoint(View<const float, 3> y, const Mask<float> &mask, std::int64_t bands, Dispersion d,
                              const Options &o) {
  return allocate_cube<float>("cassi_adjoint", CassiKernels<float>::adjoint, y, mask, bands, d, o);
}
Array<double, 4> cassi_adjoint(View<const double, 3> y, const Mask<double> &mask, std::int64_t bands, Dispersion d,
                               const Options &o) {
  return allocate_cube<double>("cassi_adjoint", CassiKernels<double>::adjoint, y, mask, bands, d, o);
}
Array<float, 4> cassi_pinv(View<const float, 3> y, const Mask<float> &mask, std::int64_t bands, Dispersion d,
                           const Options &o) {
  return allocate_cube<float>("cassi_pinv", CassiKernels<float>::pinv, y, mask, bands, d, o);
}
Array<double, 4> cassi_pinv(View<const double, 3> y, const Mask<double> &mask, std::int64_t bands, Dispersion d,
                            const Options &o) {
  return allocate_cube<double>("cassi_pinv", CassiKernels<double>::pinv, y, mask, bands, d, o);
}
Array<float, 4> cassi_pinv_alpha(View<const float, 3> y, const Mask<float> &mask, std::int64_t bands, Dispersion d,
                                 const Options &o) {
  return allocate_cube<float>("cassi_pinv_alpha", CassiKernels<float>::pinv_alpha, y, mask, bands, d, o);
}
Array<double, 4> cassi_pinv_alpha(View<const double, 3> y, const Mask<double> &mask, std::int64_t bands, Dispersion d,
                                  const Options &o) {
  return allocate_cube<double>("cassi_pinv_alpha", CassiKernels<double>::pinv_alpha, y, mask, bands, d, o);
}

}  // namespace hpipe
