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

Expr CassiGeometry::offset(const Expr &band) const { return band * step - min(0, (bands - 1) * step); }
Expr CassiGeometry::shift_w(const Expr &band) const { return select(axis == 0, offset(band), 0); }
Expr CassiGeometry::shift_h(const Expr &band) const { return select(axis == 1, offset(band), 0); }
Expr CassiGeometry::measurement_width() const { return width + select(axis == 0, (bands - 1) * abs(step), 0); }
Expr CassiGeometry::measurement_height() const { return height + select(axis == 1, (bands - 1) * abs(step), 0); }

Type accumulator_type(Type t) { return t == Float(32) ? Float(64) : t; }

BandSum band_sum(Func f, const CassiGeometry &g, BandSumForm form, Type result, const std::string &name) {
  std::vector<Var> rest;
  for (int d = 3; d < f.dimensions(); d++) rest.push_back(Var("rest" + std::to_string(d)));
  auto args = [&](std::vector<Expr> first) {
    first.insert(first.end(), rest.begin(), rest.end());
    return first;
  };
  const Type acc = value_type(f), t = result;
  // f at (ws, hs), zero outside the band image. Clamps and conditions only where an index can
  // leave the image, so that rows stay dense vector loads: along width only w moves (and only
  // when the axis is width), along height only h does.
  auto at = [&](const Expr &ws, const Expr &hs, const Expr &c) {
    Expr inside = hs >= 0 && hs < g.height && (g.axis != 0 || (ws >= 0 && ws < g.width));
    Expr wc = select(g.axis == 0, clamp(ws, 0, g.width - 1), ws);
    return select(inside, f(args({wc, clamp(hs, 0, g.height - 1), c})), cast(acc, 0));
  };

  BandSum s;
  s.axis = g.axis;
  s.step = g.step;
  s.bands = RDom(0, g.bands, name + "_c");
  s.gather = Func(name + "_gather");
  s.gather(args({w, h})) = cast(acc, 0);
  s.gather(args({w, h})) += at(w - g.shift_w(s.bands), h - g.shift_h(s.bands), s.bands);
  s.sum = Func(name);
  if (form.kind == BandSumForm::gather) {
    s.sum(args({w, h})) = cast(t, s.gather(args({w, h})));
    return s;
  }
  // The scatter, used only when the axis is width. Bands in groups of kBandsPerScatterGroup. Band G k + i sits i S
  // columns after its group's first band, so in the group's own columns u (measurement column o_{G k} + u) the group
  // adds its bands at u - i S in registers and the row of sums is loaded and stored once per group, not once per band.
  // Where every band of the group is inside its image (u in [a, b)) the loads are dense; each band's columns outside
  // that interior (its edges, within the first and the last `edge` columns of its image) are added one band at a
  // time, in whole vectors; the bands after the last whole group band by band, and so are all bands of an image
  // narrower than `edge`. Rows are not displaced: h >= H never occurs (the clamp keeps bounds inference in the image).
  auto band_row = [&](const Expr &ws, const Expr &c) { return f(args({ws, clamp(h, 0, g.height - 1), c})); };
  const int group = kBandsPerScatterGroup;
  const int lanes = form.vector_bytes / t.bytes();
  const Expr reach = (group - 1) * g.step;  // the group's last band, from its first
  const Expr edge_vectors = (cast<int>(abs(reach)) + lanes - 1) / lanes, edge = edge_vectors * lanes;
  const Expr grouped = select(g.width >= edge, g.bands / group * group, 0);  // bands in whole groups
  const Expr a = max(0, reach), b = max(a, g.width + min(0, reach));
  // Band c's columns [0, W) are [0, left(c)) before the interior, [left(c), right(c)) in it.
  auto left = [&](const Expr &c) { return clamp(a - c % group * g.step, 0, g.width); };
  auto right = [&](const Expr &c) { return clamp(b - c % group * g.step, left(c), g.width); };
  // Columns inside the image wherever the update runs; the promise holds bounds inference there when
  // no update runs (the interior is empty where W < (G - 1) |S|, the edges where W < edge).
  auto inside = [&](const Expr &ws) { return unsafe_promise_clamped(ws, 0, g.width - 1); };
  Var u("u"), k("k");
  Func group_sum(name + "_group");
  auto interior_row = [&](int i) { return band_row(inside(u - i * g.step), group * k + i); };
  Expr terms = interior_row(0);
  for (int i = 1; i < group; i++) terms += interior_row(i);
  group_sum(args({u, h, k})) = terms;

  s.scatter = Func(name + "_scatter");
  s.scatter(args({w, h})) = cast(acc, 0);
  RDom interior(a, b - a, 0, grouped / group, name + "_uk");
  s.scatter(args({interior.x + g.offset(group * interior.y), h})) += group_sum(args({interior.x, h, interior.y}));
  // A band's edge: the vectors of columns `first + vector * lanes + lane` that hold any of [from, to).
  const Expr zero = cast(acc, 0);
  auto add_edge = [&](RDom r, const Expr &first, const Expr &from, const Expr &to) {
    const Expr vector_start = first + r.y * lanes, column = vector_start + r.x;
    r.where(vector_start < to && vector_start + lanes > from);
    s.scatter(args({column + g.offset(r.z), h})) +=
        select(column >= from && column < to, band_row(inside(column), r.z), zero);
  };
  RDom left_edges(0, lanes, 0, edge_vectors, 0, grouped, name + "_left");
  add_edge(left_edges, 0, 0, left(left_edges.z));
  RDom right_edges(0, lanes, 0, edge_vectors, 0, grouped, name + "_right");
  add_edge(right_edges, g.width - edge, right(right_edges.z), g.width);
  RDom ungrouped(0, g.width, grouped, g.bands - grouped, name + "_wc");
  s.scatter(args({ungrouped.x + g.offset(ungrouped.y), h})) += band_row(ungrouped.x, ungrouped.y);
  s.scatter_updates = {interior, left_edges, right_edges, ungrouped};
  s.sum(args({w, h})) = cast(t, select(g.axis == 0, s.scatter(args({w, h})), s.gather(args({w, h}))));
  return s;
}

CassiForward cassi_forward(Func x, Func mask, const CassiGeometry &g, BandSumForm form) {
  const Type t = value_type(x), acc = accumulator_type(t);
  Func masked("masked");
  masked(w, h, c, b) = cast(acc, mask(w, h, c)) * cast(acc, x(w, h, c, b));
  CassiForward op;
  op.x_buffer = input_buffer_name(x);
  op.sum = band_sum(masked, g, form, t, "sum");
  op.y = Func("y");
  op.y(w, h, b) = op.sum.sum(w, h, b);
  return op;
}

CassiAdjoint cassi_adjoint(Func y, Func mask, const CassiGeometry &g) {
  CassiAdjoint op;
  op.axis = g.axis;
  op.x = Func("x");
  op.x(w, h, c, b) = mask(w, h, c) * y(w + g.shift_w(c), h + g.shift_h(c), b);
  return op;
}

CassiPhi cassi_phi(Func mask, const CassiGeometry &g, BandSumForm form) {
  const Type t = value_type(mask), acc = accumulator_type(t);
  Func squared("mask_squared");
  squared(w, h, c) = cast(acc, mask(w, h, c)) * cast(acc, mask(w, h, c));
  CassiPhi op;
  op.sum = band_sum(squared, g, form, t, "phi_sum");
  op.phi = Func("phi");
  // A column no band reaches (or an all-zero mask column) has Phi = 0; 1 keeps y / Phi finite.
  Func sum = op.sum.sum;
  op.phi(w, h) = select(sum(w, h) == 0, cast(t, 1), sum(w, h));
  return op;
}

CassiPinv cassi_pinv(Func y, Func mask, const CassiGeometry &g, BandSumForm form) {
  CassiPinv op;
  op.phi = cassi_phi(mask, g, form);
  op.normalized = Func("normalized");
  op.normalized(w, h, b) = y(w, h, b) / op.phi.phi(w, h);
  op.x = cassi_adjoint(op.normalized, mask, g).x;
  return op;
}

CassiPinvAlpha cassi_pinv_alpha(Func y, Func mask, const CassiGeometry &g) {
  // alpha = number of bands whose displaced image covers the measurement column (or row).
  Var along("along");
  Expr extent = select(g.axis == 0, g.width, g.height);
  Expr s = abs(g.step);
  // The offsets are {0, s, ..., (C - 1) s} whatever the sign of S; band k covers the column when
  // along - extent < k s <= along, i.e. k in [ceil((along - extent + 1) / s), floor(along / s)].
  Expr hi = min(g.bands - 1, select(s == 0, g.bands - 1, along / max(s, 1)));
  Expr lo = max(0, select(s == 0, 0, (along - extent + s) / max(s, 1)));
  CassiPinvAlpha op;
  op.axis = g.axis;
  op.step = g.step;
  op.alpha = Func("alpha");
  op.alpha(along) = max(hi - lo + 1, 1);
  op.normalized = Func("normalized");
  op.normalized(w, h, b) = y(w, h, b) / cast(value_type(y), op.alpha(select(g.axis == 0, w, h)));
  op.mask_inverse = Func("mask_inverse");
  Type t = value_type(mask);
  Var plane("plane");
  op.mask_inverse(w, h, plane) = select(mask(w, h, plane) == 0, cast(t, 0), cast(t, 1) / mask(w, h, plane));
  op.x = Func("x");
  // Band c reads plane min(c, planes - 1): the region of the inverse a call needs is then one plane
  // for a shared mask, not one per band.
  Expr plane_of_band = min(c, g.mask_planes - 1);
  op.x(w, h, c, b) = op.normalized(w + g.shift_w(c), h + g.shift_h(c), b) * op.mask_inverse(w, h, plane_of_band);
  return op;
}

CassiShift cassi_shift(Func x, const CassiGeometry &g) {
  Func inside = zero_outside(x, g);
  CassiShift op;
  op.axis = g.axis;
  op.out = Func("shifted");
  op.out(w, h, c, b) = inside(w - g.shift_w(c), h - g.shift_h(c), c, b);
  return op;
}

CassiShift cassi_shift_back(Func x, const CassiGeometry &g) {
  CassiShift op;
  op.axis = g.axis;
  op.out = Func("unshifted");
  op.out(w, h, c, b) = x(w + g.shift_w(c), h + g.shift_h(c), c, b);
  return op;
}

}  // namespace hpipe::alg
