#include "generators/recon.h"

namespace hpipe::alg {

using namespace Halide;

namespace {
Var w("w"), h("h"), c("c"), b("b"), s("slot");

// div p at (x, y) from accessors of the two dual components, which are 0 outside the image.
template <class PW, class PH>
Expr divergence_at(PW pw, PH ph, const Expr &x, const Expr &y) {
  return (pw(x - 1, y) - pw(x, y)) + (ph(x, y - 1) - ph(x, y));
}

// 1 / s for s >= 1. float32: the hardware estimate refined by one Newton step (error about 1 ulp,
// a fraction of the cost of a division); double: a division.
Expr reciprocal(const Expr &s) {
  if (s.type() != Float(32)) return 1 / s;
  const Expr r = fast_inverse(s);
  return r * (2 - s * r);
}

// grad f(w, h, c, b) by forward differences, 0 on the last column / row (skimage's gradient).
Tuple forward_gradient(Func f, const Expr &width, const Expr &height) {
  const Expr zero = cast(value_type(f), 0);
  return Tuple(select(w < width - 1, f(w + 1, h, c, b) - f(w, h, c, b), zero),
               select(h < height - 1, f(w, h + 1, c, b) - f(w, h, c, b), zero));
}

// One Chambolle step of a dual p = (pw, ph) along the gradient g = (gw, gh), tau = 1/4:
// (p - tau g) / (1 + tau / weight * sqrt(norm_sq)), where norm_sq is |g|^2 (per band) or its sum
// over the bands (vectorial).
Tuple chambolle_step(const Expr &pw, const Expr &ph, const Expr &gw, const Expr &gh, const Expr &norm_sq,
                     const Expr &weight) {
  const Expr tau = cast(gw.type(), Expr(0.25f));
  const Expr inv_scale = reciprocal(1 + (tau / weight) * sqrt(norm_sq));
  return Tuple((pw - tau * gw) * inv_scale, (ph - tau * gh) * inv_scale);
}

// p(x, y) of a dual stored with a one-pixel border (see TvVectorialStep).
auto unbordered(Func bordered) {
  return [bordered](const Expr &x, const Expr &y) { return bordered(x + 1, y + 1, c, b); };
}
}  // namespace

TvChambolle tv_chambolle(Func image, Expr width, Expr height, Expr weight, Expr iterations) {
  TvChambolle tv;
  const Type t = value_type(image);
  const Expr zero = cast(t, 0);
  // The image is read one pixel past its last row and column, where the gradient is 0 whatever
  // is read: repeat the edge so those reads stay inside the computed image.
  tv.image = Func("tv_image");
  tv.image(w, h, c, b) = image(w, h, c, b);
  Func f = BoundaryConditions::repeat_edge(tv.image, {{0, width}, {0, height}});

  // grad u_k = grad f + grad div p_k: the steps read grad f, not f, so a schedule that stores grad f
  // keeps every load of a step a plain one (f one column past the image is a clamped read).
  tv.image_gradient = Func("tv_image_gradient");
  tv.image_gradient(w, h, c, b) = forward_gradient(f, width, height);
  const auto step = [&](const Expr &pw, const Expr &ph, const Expr &gw, const Expr &gh) {
    return chambolle_step(pw, ph, gw, gh, gw * gw + gh * gh, weight);
  };

  // The dual is stored with a one-pixel border that no step writes, 0 there as skimage's "p = 0
  // outside the image", so every access is a plain neighbour load. Step 0 reads p_0 = 0: it is an
  // update of its own that reads no dual, and the second update runs steps 1 .. n - 2. Bounds
  // inference sees an update's rows whatever its step count, so an update without steps has no
  // rows: n = 1 (out = f, the vectorial GAP-TV / ADMM-TV data step) computes no image gradient.
  // Step 0 also runs inside a loop of one pass, or none when n = 1: a CUDA schedule keeps that loop
  // on the host, so it launches nothing rather than a grid of no blocks, which CUDA rejects.
  const auto rows_for = [&](const Expr &steps) { return select(steps > 0, height, 0); };
  Func p("tv_dual");
  p(w, h, c, b, s) = Tuple(zero, zero);
  tv.first_step = RDom(0, width, 0, rows_for(iterations - 1), 0, select(iterations > 1, 1, 0), "tv_first_step");
  const RVar x0 = tv.first_step.x, y0 = tv.first_step.y;
  p(x0, y0, c, b, 1) = step(zero, zero, tv.image_gradient(x0, y0, c, b)[0], tv.image_gradient(x0, y0, c, b)[1]);
  tv.steps = RDom(0, width, 0, rows_for(iterations - 2), 1, max(iterations - 2, 0), "tv_step");
  const RVar x = tv.steps.x, y = tv.steps.y, k = tv.steps.z;
  const Expr read = k % 2;
  auto pw = [&](Expr xx, Expr yy) { return p(xx, yy, c, b, read)[0]; };
  auto ph = [&](Expr xx, Expr yy) { return p(xx, yy, c, b, read)[1]; };
  auto div_p = [&](Expr xx, Expr yy) { return divergence_at(pw, ph, xx, yy); };
  const Expr div_here = div_p(x, y);
  const Expr gw = select(x < width - 1, tv.image_gradient(x, y, c, b)[0] + (div_p(x + 1, y) - div_here), zero);
  const Expr gh = select(y < height - 1, tv.image_gradient(x, y, c, b)[1] + (div_p(x, y + 1) - div_here), zero);
  p(x, y, c, b, (k + 1) % 2) = step(pw(x, y), ph(x, y), gw, gh);
  tv.dual = p;

  const Expr last = max(iterations - 1, 0) % 2;
  tv.divergence = Func("tv_divergence");
  tv.divergence(w, h, c, b) = divergence_at([&](Expr xx, Expr yy) { return p(xx, yy, c, b, last)[0]; },
                                            [&](Expr xx, Expr yy) { return p(xx, yy, c, b, last)[1]; }, w, h);
  tv.out = Func("tv_out");
  tv.out(w, h, c, b) = tv.image(w, h, c, b) + tv.divergence(w, h, c, b);
  return tv;
}

TvVectorialStep tv_vectorial_step(Func image, Func bordered_p_w, Func bordered_p_h, Expr first, Expr width, Expr height,
                                  Expr bands, Expr weight) {
  TvVectorialStep tv;
  const Type t = value_type(image);
  const Expr zero = cast(t, 0);
  tv.first = first;
  tv.image = BoundaryConditions::repeat_edge(image, {{0, width}, {0, height}});
  const auto read_pw = unbordered(bordered_p_w), read_ph = unbordered(bordered_p_h);
  const auto pw = [&](const Expr &x, const Expr &y) { return select(first, zero, read_pw(x, y)); };
  const auto ph = [&](const Expr &x, const Expr &y) { return select(first, zero, read_ph(x, y)); };
  tv.primal = Func("tv_primal");
  tv.primal(w, h, c, b) = tv.image(w, h, c, b) + divergence_at(pw, ph, w, h);
  Func grad("tv_gradient");
  grad(w, h, c, b) = forward_gradient(tv.primal, width, height);
  tv.bands = RDom(0, bands, "band");
  tv.norm_sq = Func("tv_norm_sq");
  tv.norm_sq(w, h, b) = zero;
  const Expr gw = grad(w, h, tv.bands, b)[0], gh = grad(w, h, tv.bands, b)[1];
  tv.norm_sq(w, h, b) += gw * gw + gh * gh;
  tv.next = Func("tv_dual_next");
  tv.next(w, h, c, b) =
      chambolle_step(pw(w, h), ph(w, h), grad(w, h, c, b)[0], grad(w, h, c, b)[1], tv.norm_sq(w, h, b), weight);
  return tv;
}

TvFinish tv_finish(Func image, Func bordered_p_w, Func bordered_p_h) {
  const Expr div = divergence_at(unbordered(bordered_p_w), unbordered(bordered_p_h), w, h);
  TvFinish tv;
  tv.out = Func("tv_finish");
  tv.out(w, h, c, b) = Tuple(image(w, h, c, b) + div, div);
  return tv;
}

namespace {
// x + lambda A^T normalized
Func projection_step(Func x, Func normalized, Func mask, const CassiGeometry &g, Expr lambda) {
  Func adjoint = cassi_adjoint(normalized, mask, g).x;
  Func data("data");
  data(w, h, c, b) = x(w, h, c, b) + lambda * adjoint(w, h, c, b);
  return data;
}
}  // namespace

GapTvIteration gap_tv_iteration(Func x, Func y, Func y1, Func mask, Func phi, const CassiGeometry &g, BandSumForm form,
                                Expr lambda, Expr accelerate, Expr tv_weight, Expr tv_iterations) {
  GapTvIteration it;
  it.forward = cassi_forward(x, mask, g, form);
  Func yb = it.forward.y;
  it.y1 = Func("y1_updated");
  it.y1(w, h, b) = y1(w, h, b) + (y(w, h, b) - yb(w, h, b));
  it.normalized = Func("normalized");
  it.normalized(w, h, b) = (select(accelerate != 0, it.y1(w, h, b), y(w, h, b)) - yb(w, h, b)) / phi(w, h);
  it.data = projection_step(x, it.normalized, mask, g, lambda);
  it.tv = tv_chambolle(it.data, g.width, g.height, tv_weight, tv_iterations);
  return it;
}

AdmmTvIteration admm_tv_iteration(Func theta, Func bvar, Func y, Func mask, Func phi, const CassiGeometry &g,
                                  BandSumForm form, Expr lambda, Expr gamma, Expr tv_weight, Expr tv_iterations) {
  AdmmTvIteration it;
  it.sum = Func("theta_plus_b");
  it.sum(w, h, c, b) = theta(w, h, c, b) + bvar(w, h, c, b);
  it.forward = cassi_forward(it.sum, mask, g, form);
  it.normalized = Func("normalized");
  it.normalized(w, h, b) = (y(w, h, b) - it.forward.y(w, h, b)) / (phi(w, h) + gamma);
  it.data = projection_step(it.sum, it.normalized, mask, g, lambda);
  Func shifted("x_minus_b");
  shifted(w, h, c, b) = it.data(w, h, c, b) - bvar(w, h, c, b);
  it.tv = tv_chambolle(shifted, g.width, g.height, tv_weight, tv_iterations);
  it.out = Func("theta_b_next");
  it.out(w, h, c, b) = Tuple(it.tv.out(w, h, c, b), it.tv.divergence(w, h, c, b));
  return it;
}

}  // namespace hpipe::alg
