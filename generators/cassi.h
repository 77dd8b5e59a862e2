// CASSI operator family: algorithms only (schedules live in schedules/cassi_*.cpp).
//
// Layout (Halide dimension order, innermost first; NumPy shapes reversed):
//   cube x(w, h, c, b)        NumPy (B, C, H, W)
//   mask m(w, h, c)           NumPy (C, H, W); a shared (H, W) mask is passed with a c-stride of 0
//   measurement y(w', h', b)  NumPy (B, H', W'): the dispersion axis grows by (C - 1) * |S|
// Band c is displaced by o_c = c * S - min(0, (C - 1) * S) >= 0 along the dispersion axis
// (axis 0 = width, 1 = height), so a negative step shifts bands the other way.
#pragma once

#include <string>

#include "Halide.h"
#include "generators/common.h"

namespace hpipe::alg {

struct CassiGeometry {
  Halide::Expr width, height, bands;  // of the cube
  Halide::Expr step;                  // S, signed
  Halide::Expr axis;                  // 0 = width, 1 = height
  Halide::Expr mask_planes;           // 1 for a shared mask, else bands; undefined with no mask

  Halide::Expr offset(const Halide::Expr &c) const;
  Halide::Expr shift_w(const Halide::Expr &c) const;  // displacement of band c along width
  Halide::Expr shift_h(const Halide::Expr &c) const;  // ... along height
  Halide::Expr measurement_width() const;
  Halide::Expr measurement_height() const;
};

// The geometry of the cube under a mask buffer (w, h, c): a c-stride of 0 marks a shared mask.
template <class MaskBuffer>
CassiGeometry mask_geometry(const MaskBuffer &mask, const Halide::Expr &step, const Halide::Expr &axis) {
  Halide::Expr bands = mask.dim(2).extent();
  return {mask.dim(0).extent(), mask.dim(1).extent(), bands, step, axis,
          Halide::select(mask.dim(2).stride() == 0, 1, bands)};
}

// sum_c f(w' - sw(c), h' - sh(c), c, rest...) over the bands, f zero outside the band image.
// Two forms: `gather` reads, for each output, band c at its displaced position; for width
// dispersion its vector loads are misaligned by a per-band amount and must be clamped, so CPUs
// use `scatter` there: the rows of a group of bands added, densely, at the group's offset.
struct BandSumForm {
  enum Kind { gather, scatter_along_width } kind;
  // scatter: bytes of the target's vectors. Each band's columns outside its group's interior (its
  // edges) are added in whole vectors of the result type, the columns outside the edge adding 0:
  // masked stores, where a target has them at all, cost AVX2 CPUs dozens of micro-ops each.
  int vector_bytes = 0;
};
// Bands per group of the scatter form: 4 and 14 were slower at W4 (docs/performance-notes.md).
constexpr int kBandsPerScatterGroup = 7;
struct BandSum {
  Halide::Func gather;
  Halide::Func scatter;  // defined with the scatter_along_width form only
  Halide::Func sum;      // gather, or scatter when the axis is width
  Halide::RDom bands;    // c of gather's update
  // The RDom of each scatter update, in order: a group's interior (column, group), each band's
  // edges before and after it (lane, vector, band: the lanes one whole vector, every vector of
  // them within the edge or skipped), the bands after the last whole group (column, band).
  std::vector<Halide::RDom> scatter_updates;
  Halide::Expr axis;  // the geometry's axis and step, for schedules to specialize on
  Halide::Expr step;
};
// f(w, h, c, rest...) -> sum(w', h', rest...), accumulated in f's type, rounded to `result`.
BandSum band_sum(Halide::Func f, const CassiGeometry &g, BandSumForm form, Halide::Type result,
                 const std::string &name);

// Sums of float32 products are formed in float64: the products are exact there and the sum is
// rounded once, so float32 A x and Phi are within 0.5 ULP of the exact result. (Rounding each of C
// growing partial sums in float32 made A's error the largest error of everything built on it.)
Halide::Type accumulator_type(Halide::Type t);

// The form each backend's schedule expects (the generators pass it to the algorithm).
inline BandSumForm band_sum_form(const Halide::Target &t) {
  if (t.has_gpu_feature()) return {BandSumForm::gather};
  return {BandSumForm::scatter_along_width, t.natural_vector_size(Halide::UInt(8))};
}

// Each op returns its output and the intermediate Funcs a schedule may place.
struct CassiForward {
  BandSum sum;           // of m * x
  Halide::Func y;        // = sum.sum
  std::string x_buffer;  // the buffer x reads, when x is an input (as in every pipeline)
};
CassiForward cassi_forward(Halide::Func x, Halide::Func mask, const CassiGeometry &g, BandSumForm form);

struct CassiAdjoint {
  Halide::Func x;     // x(w, h, c, b) = m(w, h, c) * y(w + sw(c), h + sh(c), b)
  Halide::Expr axis;  // the geometry's axis, for schedules to specialize on
};
CassiAdjoint cassi_adjoint(Halide::Func y, Halide::Func mask, const CassiGeometry &g);

struct CassiPhi {
  BandSum sum;       // of m^2
  Halide::Func phi;  // sum with 0 replaced by 1
};
CassiPhi cassi_phi(Halide::Func mask, const CassiGeometry &g, BandSumForm form);

struct CassiPinv {
  CassiPhi phi;
  Halide::Func normalized;  // y / phi
  Halide::Func x;           // adjoint of normalized
};
CassiPinv cassi_pinv(Halide::Func y, Halide::Func mask, const CassiGeometry &g, BandSumForm form);

struct CassiPinvAlpha {
  Halide::Func alpha;         // (along): number of bands covering the measurement column (or row)
  Halide::Func normalized;    // y / alpha
  Halide::Func mask_inverse;  // 1 / m, and 0 where m == 0 (nothing was measured there)
  Halide::Func x;             // crop of normalized times mask_inverse
  Halide::Expr axis, step;    // the geometry's axis and step, for schedules
};
CassiPinvAlpha cassi_pinv_alpha(Halide::Func y, Halide::Func mask, const CassiGeometry &g);

struct CassiShift {
  Halide::Func out;   // shift: out(w', h', c, b) = x(w' - sw(c), h' - sh(c), c, b), zero outside
  Halide::Expr axis;  // the geometry's axis, for schedules to specialize on
};
CassiShift cassi_shift(Halide::Func x, const CassiGeometry &g);
CassiShift cassi_shift_back(Halide::Func x, const CassiGeometry &g);  // crop: in(w + sw(c), ...)

// Estimates: the W4 workload of shared/workloads.md, (B, C, H, W) = (16, 28, 256, 256), S = 2.
struct CassiEstimates {
  int batch = 16, bands = 28, height = 256, width = 256, step = 2, axis = 0;
  int measurement_width() const { return width + (bands - 1) * step; }
  Halide::Region cube() const { return {{0, width}, {0, height}, {0, bands}, {0, batch}}; }
  Halide::Region mask() const { return {{0, width}, {0, height}, {0, bands}}; }
  Halide::Region measurement() const { return {{0, measurement_width()}, {0, height}, {0, batch}}; }
  Halide::Region shifted_cube() const { return {{0, measurement_width()}, {0, height}, {0, bands}, {0, batch}}; }
  Halide::Region phi() const { return {{0, measurement_width()}, {0, height}}; }
};

}  // namespace hpipe::alg
