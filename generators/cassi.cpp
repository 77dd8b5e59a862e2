#include "generators/cassi.h"

namespace hpipe::alg {

using namespace Halide;

namespace {
Var w("w"), h("h"), c("c"), b("b");

// Zero outside the band image [0, W) x [0, H); `likely` lets Halide split off the interior loop.
Func zero_outside(Func f, const CassiGeometry &g) {
  return BoundaryConditions::constant_exterior(f, cast(value_type(f), 0), {{0, g.width}, {0, g.height}});
}
}  // namespace

Expr CassiGeometry::offset(const Expr &band) const {
  return band * step - min(0, (bands - 1) * step);
}
Expr CassiGeometry::shift_w(const Expr &band) const { return select(axis == 0, offset(band), 0); }
Expr CassiGeometry::shift_h(const Expr &band) const { return select(axis == 1, offset(band), 0); }
Expr CassiGeometry::measurement_width() const {
  return width + select(axis == 0, (bands - 1) * abs(step), 0);
}
Expr CassiGeometry::measurement_height() const {
  return height + select(axis == 1, (bands - 1) * abs(step), 0);
}

CassiForward cassi_forward(Func x, Func mask, const CassiGeometry &g) {
  Func masked("masked");
  masked(w, h, c, b) = mask(w, h, c) * x(w, h, c, b);
  Func inside = zero_outside(masked, g);

  CassiForward op;
  op.bands = RDom(0, g.bands, "band");
  op.sum = Func("sum");
  op.sum(w, h, b) = cast(value_type(x), 0);
  op.sum(w, h, b) += inside(w - g.shift_w(op.bands), h - g.shift_h(op.bands), op.bands, b);
  op.y = Func("y");
  op.y(w, h, b) = op.sum(w, h, b);
  return op;
}

CassiAdjoint cassi_adjoint(Func y, Func mask, const CassiGeometry &g) {
  CassiAdjoint op;
  op.x = Func("x");
  op.x(w, h, c, b) = mask(w, h, c) * y(w + g.shift_w(c), h + g.shift_h(c), b);
  return op;
}

CassiPhi cassi_phi(Func mask, const CassiGeometry &g) {
  Func squared("mask_squared");
  squared(w, h, c) = mask(w, h, c) * mask(w, h, c);
  Func inside = BoundaryConditions::constant_exterior(squared, cast(value_type(mask), 0),
                                                      {{0, g.width}, {0, g.height}});
  CassiPhi op;
  op.bands = RDom(0, g.bands, "band");
  Func sum_sq("phi_sum");
  sum_sq(w, h) = cast(value_type(mask), 0);
  sum_sq(w, h) += inside(w - g.shift_w(op.bands), h - g.shift_h(op.bands), op.bands);
  op.phi_sum = sum_sq;
  op.phi = Func("phi");
  // A column no band reaches (or an all-zero mask column) has Phi = 0; 1 keeps y / Phi finite.
  op.phi(w, h) = select(sum_sq(w, h) == 0, cast(value_type(mask), 1), sum_sq(w, h));
  return op;
}

CassiPinv cassi_pinv(Func y, Func mask, const CassiGeometry &g) {
  CassiPinv op;
  op.phi = cassi_phi(mask, g);
  op.normalized = Func("normalized");
  op.normalized(w, h, b) = y(w, h, b) / op.phi.phi(w, h);
  op.x = cassi_adjoint(op.normalized, mask, g).x;
  return op;
}

CassiPinvAlpha cassi_pinv_alpha(Func y, Func mask, const CassiGeometry &g) {
  // alpha = number of bands whose displaced image covers the measurement column (or row).
  Expr along = select(g.axis == 0, w, h);
  Expr extent = select(g.axis == 0, g.width, g.height);
  Expr s = abs(g.step);
  // The offsets are {0, s, ..., (C - 1) s} whatever the sign of S; band k covers the column when
  // along - extent < k s <= along, i.e. k in [ceil((along - extent + 1) / s), floor(along / s)].
  Expr hi = min(g.bands - 1, select(s == 0, g.bands - 1, along / max(s, 1)));
  Expr lo = max(0, select(s == 0, 0, (along - extent + s) / max(s, 1)));
  Expr alpha = max(hi - lo + 1, 1);
  CassiPinvAlpha op;
  op.normalized = Func("normalized");
  op.normalized(w, h, b) = y(w, h, b) / cast(value_type(y), alpha);
  op.mask_inverse = Func("mask_inverse");
  Type t = value_type(mask);
  op.mask_inverse(w, h, c) = select(mask(w, h, c) == 0, cast(t, 0), cast(t, 1) / mask(w, h, c));
  op.x = Func("x");
  op.x(w, h, c, b) = op.normalized(w + g.shift_w(c), h + g.shift_h(c), b) * op.mask_inverse(w, h, c);
  return op;
}

CassiShift cassi_shift(Func x, const CassiGeometry &g) {
  Func inside = zero_outside(x, g);
  CassiShift op;
  op.out = Func("shifted");
  op.out(w, h, c, b) = inside(w - g.shift_w(c), h - g.shift_h(c), c, b);
  return op;
}

CassiShift cassi_shift_back(Func x, const CassiGeometry &g) {
  CassiShift op;
  op.out = Func("unshifted");
  op.out(w, h, c, b) = x(w + g.shift_w(c), h + g.shift_h(c), c, b);
  return op;
}

}  // namespace hpipe::alg
