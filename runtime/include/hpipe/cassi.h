// CASSI (coded-aperture snapshot spectral imaging) operators.
//
// Shapes (NumPy order): cube x (B, C, H, W); mask (H, W) shared by all bands or (C, H, W) per band;
// measurement y (B, H, W') with W' = W + (C - 1)|S| when dispersing along width, or (B, H', W)
// with H' = H + (C - 1)|S| along height. Band c is displaced by o_c = c S - min(0, (C - 1) S), so
// S > 0 moves later bands right (down), S < 0 moves them left (up), S = 0 stacks them.
//
//   forward      y[b, h, w'] = sum_c m_c[h, w' - o_c] x[b, c, h, w' - o_c]       (A)
//   adjoint      x[b, c, h, w] = m_c[h, w] y[b, h, w + o_c]                        (A^T)
//   phi          Phi[h, w'] = sum_c m_c[h, w' - o_c]^2, with 0 replaced by 1        (H, W')
//   pinv         x = A^T (y / Phi); A(pinv(y)) = y for every y in the range of A   (A^+)
//   pinv_alpha   column-count inverse: x[b, c, h, w] = (y / alpha)[b, h, w + o_c] / m_c[h, w],
//                alpha[w'] = number of bands covering column w'. Where m_c[h, w] == 0 nothing of
//                x was measured: the result there is 0 (for finite y; never inf or NaN then).
//   shift        unmasked displacement with zero padding: (B, C, H, W) -> (B, C, H, W')
//   shift_back   its inverse, a crop: (B, C, H, W') -> (B, C, H, W)
// (Formulas shown for width; along height, h and w swap roles.)
//
// Accuracy (tested against a double-precision reference on random inputs):
//   float32 forward and phi: products and sums are formed in float64 and rounded once, so each
//     output is within 0.5 ULP of the exact value. float64: up to C + 1 roundings of the sum.
//   adjoint, shift, shift_back: one rounding (or exact); pinv: phi's error plus two roundings;
//   pinv_alpha: four roundings. W4 round trip (B, C, H, W) = (16, 28, 256, 256), S = 2, x and mask
//   uniform in (0, 1]: mean |A(pinv_alpha(A x)) - A x| = 6.4e-8 in float32.
// Outputs must not overlap inputs. Any strides are accepted; a non-unit innermost stride costs a copy.
#pragma once

#include <array>
#include <cstdint>

#include "hpipe/device.h"
#include "hpipe/view.h"

namespace hpipe {

enum class Axis { width, height };

struct Dispersion {
  int step = 2;  // S: displacement between neighbouring bands, in pixels (any sign)
  Axis axis = Axis::width;
};

// A coded-aperture mask: (H, W) shared by all bands, or (C, H, W), one per band.
template <class T>
class Mask {
 public:
  Mask(View<const T, 2> shared) : view_(broadcast(shared)), per_band_(false) {}  // NOLINT
  Mask(View<const T, 3> per_band) : view_(per_band), per_band_(true) {}          // NOLINT
  Mask(View<T, 2> shared) : Mask(View<const T, 2>(shared)) {}                    // NOLINT
  Mask(View<T, 3> per_band) : Mask(View<const T, 3>(per_band)) {}                // NOLINT
  // An Array too, as the ops take one for their other arguments (a view of it: keep it alive).
  Mask(const Array<T, 2> &shared) : Mask(shared.view()) {}     // NOLINT
  Mask(const Array<T, 3> &per_band) : Mask(per_band.view()) {}  // NOLINT

  bool per_band() const { return per_band_; }
  // As (C, H, W); a shared mask has one band with stride 0 until bound to a band count.
  const View<const T, 3> &view() const { return view_; }

 private:
  static View<const T, 3> broadcast(const View<const T, 2> &m) {
    return View<const T, 3>(m.data(), {1, m.shape(0), m.shape(1)}, {0, m.stride(0), m.stride(1)}, m.memory());
  }
  View<const T, 3> view_;
  bool per_band_;
};

// Shape helpers: the measurement of a (B, C, H, W) cube, and the cube of a measurement. hpipe::Error
// for a dispersion the ops refuse, a negative extent, fewer than 1 band, a shape whose extents would
// overflow, or a measurement too small for its bands.
std::array<std::int64_t, 3> cassi_measurement_shape(const std::array<std::int64_t, 4> &cube, Dispersion d);
std::array<std::int64_t, 4> cassi_cube_shape(const std::array<std::int64_t, 3> &measurement, std::int64_t bands,
                                             Dispersion d);

// Each op in float32 and float64, writing into caller-allocated outputs.
void cassi_forward(View<const float, 4> x, const Mask<float> &mask, Dispersion d, View<float, 3> y,
                   const Options &options = {});
void cassi_forward(View<const double, 4> x, const Mask<double> &mask, Dispersion d, View<double, 3> y,
                   const Options &options = {});
void cassi_adjoint(View<const float, 3> y, const Mask<float> &mask, Dispersion d, View<float, 4> x,
                   const Options &options = {});
void cassi_adjoint(View<const double, 3> y, const Mask<double> &mask, Dispersion d, View<double, 4> x,
                   const Options &options = {});
void cassi_phi(const Mask<float> &mask, std::int64_t bands, Dispersion d, View<float, 2> phi,
               const Options &options = {});
void cassi_phi(const Mask<double> &mask, std::int64_t bands, Dispersion d, View<double, 2> phi,
               const Options &options = {});
void cassi_pinv(View<const float, 3> y, const Mask<float> &mask, Dispersion d, View<float, 4> x,
                const Options &options = {});
void cassi_pinv(View<const double, 3> y, const Mask<double> &mask, Dispersion d, View<double, 4> x,
                const Options &options = {});
void cassi_pinv_alpha(View<const float, 3> y, const Mask<float> &mask, Dispersion d, View<float, 4> x,
                      const Options &options = {});
void cassi_pinv_alpha(View<const double, 3> y, const Mask<double> &mask, Dispersion d, View<double, 4> x,
                      const Options &options = {});
void cassi_shift(View<const float, 4> x, Dispersion d, View<float, 4> shifted, const Options &options = {});
void cassi_shift(View<const double, 4> x, Dispersion d, View<double, 4> shifted, const Options &options = {});
void cassi_shift_back(View<const float, 4> shifted, Dispersion d, View<float, 4> x, const Options &options = {});
void cassi_shift_back(View<const double, 4> shifted, Dispersion d, View<double, 4> x, const Options &options = {});

// Allocating forms: return a new host array (inputs must be host memory).
Array<float, 3> cassi_forward(View<const float, 4> x, const Mask<float> &mask, Dispersion d,
                              const Options &options = {});
Array<double, 3> cassi_forward(View<const double, 4> x, const Mask<double> &mask, Dispersion d,
                               const Options &options = {});
Array<float, 4> cassi_adjoint(View<const float, 3> y, const Mask<float> &mask, std::int64_t bands, Dispersion d,
                              const Options &options = {});
Array<double, 4> cassi_adjoint(View<const double, 3> y, const Mask<double> &mask, std::int64_t bands, Dispersion d,
                               const Options &options = {});
Array<float, 4> cassi_pinv(View<const float, 3> y, const Mask<float> &mask, std::int64_t bands, Dispersion d,
                           const Options &options = {});
Array<double, 4> cassi_pinv(View<const double, 3> y, const Mask<double> &mask, std::int64_t bands, Dispersion d,
                            const Options &options = {});
Array<float, 4> cassi_pinv_alpha(View<const float, 3> y, const Mask<float> &mask, std::int64_t bands, Dispersion d,
                                 const Options &options = {});
Array<double, 4> cassi_pinv_alpha(View<const double, 3> y, const Mask<double> &mask, std::int64_t bands, Dispersion d,
                                  const Options &options = {});

}  // namespace hpipe
