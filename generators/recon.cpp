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

const float kTau = 0.25f;  // Chambolle's step

// 1 / (1 + tau / weight * sqrt(norm_sq)), the factor of a Chambolle step, where norm_sq is |g|^2
// (per band) or its sum over the bands (vectorial).
Expr chambolle_inverse_scale(const Expr &norm_sq, const Expr &weight) {
  return reciprocal(1 + (cast(norm_sq.type(), Expr(kTau)) / weight) * sqrt(norm_sq));
}

// One Chambolle step of a dual p = (pw, ph) along the gradient g = (gw, gh): (p - tau g) * inverse_scale.
Tuple chambolle_step(const Expr &pw, const Expr &ph, const Expr &gw, const Expr &gh, const Expr &inverse_scale) {
  const Expr tau = cast(gw.type(), Expr(kTau));
  return Tuple((pw - tau * gw) * inverse_scale, (ph - tau * gh) * inverse_scale);
}

}  // namespace

TvChambolle tv_chambolle(Func image, Expr width, Expr height, Expr weight, Expr iterations, Expr strip_rows) {
  TvChambolle tv;
  tv.strip_rows = strip_rows;
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
    return chambolle_step(pw, ph, gw, gh, chambolle_inverse_scale(gw * gw + gh * gh, weight));
  };

  // The dual is stored with a one-pixel frame that no step writes, 0 there as skimage's "p = 0
  // outside the image", so every access is a plain neighbour load. Only the frame is filled: step 0
  // writes slot 1's interior and step 1 slot 0's before anything reads them, so the pure definition
  // leaves the planes undefined (filling them with zeros took about a sixth of a TV call). Step 0
  // reads p_0 = 0: it is an update of its own that reads no dual, and the next update runs steps
  // 1 .. n - 2. Bounds inference sees an update's rows whatever its step count, so an update
  // without steps has no rows: n = 1 (out = f, the vectorial GAP-TV / ADMM-TV data step) computes
  // no image gradient. The frame's slots and step 0 run inside loops of no passes when n = 1: a
  // CUDA schedule keeps those loops on the host, so they launch nothing rather than a grid of no
  // blocks, which CUDA rejects.
  //
  // Strips: the output's rows [top, top + R) of strip `strip` (R = strip_rows) come from a dual of
  // their own over the window [top - m, top + R + m - 1) of rows (m = n - 1 dual steps), cut to the
  // image, with the frame around the window. p_1 needs only grad f, exact everywhere; a window's
  // edge then makes p_k wrong up to k - 1 rows from it, and the output reads p_m one row up: the
  // strip's rows are exact, the same values as from one window over the whole image.
  const Var strip("strip");
  const Expr m = max(iterations - 1, 0);
  const Expr top = strip * strip_rows;
  const Expr window_top = max(top - m, 0), window_end = min(top + strip_rows + m - 1, height);
  const Expr window_rows = strip_rows + 2 * m - 1;  // the most a window has
  const auto rows_for = [&](const Expr &steps) { return select(steps > 0, window_rows, 0); };
  const auto window_row = [&](const RVar &r) { return top - m + r; };
  Func p("tv_dual");
  p(w, h, c, b, s, strip) = Tuple(undef(t), undef(t));
  // The frame's four sides: the rows above and below the window (columns -1 .. width), columns -1
  // and `width` (the window's rows). The clamps only tell bounds inference where the coordinates go.
  tv.frame = RDom(0, max(width + 2, window_rows), 0, 4, 0, select(iterations > 1, 2, 0), "tv_frame");
  const RVar along = tv.frame.x, side = tv.frame.y, frame_slot = tv.frame.z;
  tv.frame.where(along < select(side < 2, width + 2, window_end - window_top));
  const Expr frame_x = select(side < 2, clamp(along - 1, -1, width), side == 2, -1, width);
  const Expr frame_y =
      select(side == 0, window_top - 1, side == 1, window_end, clamp(window_top + along, window_top, window_end - 1));
  p(frame_x, frame_y, c, b, frame_slot, strip) = Tuple(zero, zero);
  tv.first_step = RDom(0, width, 0, rows_for(iterations - 1), 0, select(iterations > 1, 1, 0), "tv_first_step");
  const RVar x0 = tv.first_step.x;
  const Expr y0 = window_row(tv.first_step.y);
  tv.first_step.where(y0 >= 0 && y0 < window_end);
  p(x0, y0, c, b, 1, strip) = step(zero, zero, tv.image_gradient(x0, y0, c, b)[0], tv.image_gradient(x0, y0, c, b)[1]);
  tv.steps = RDom(0, width, 0, rows_for(iterations - 2), 1, max(iterations - 2, 0), "tv_step");
  const RVar x = tv.steps.x, k = tv.steps.z;
  const Expr y = window_row(tv.steps.y);
  tv.steps.where(y >= 0 && y < window_end);
  const Expr read = k % 2;
  auto pw = [&](Expr xx, Expr yy) { return p(xx, yy, c, b, read, strip)[0]; };
  auto ph = [&](Expr xx, Expr yy) { return p(xx, yy, c, b, read, strip)[1]; };
  auto div_p = [&](Expr xx, Expr yy) { return divergence_at(pw, ph, xx, yy); };
  const Expr div_here = div_p(x, y);
  // grad u = grad f + grad div p is 0 on the last column and row, where grad f already is: there
  // the difference of div p (finite: the frame is 0) is multiplied by 0 (one FMA per component,
  // where a select took a vector compare and a blend; the results are the same).
  const Expr one = cast(t, 1);
  tv.forward_weight_w = Func("tv_forward_weight_w");
  tv.forward_weight_w(w) = select(w < width - 1, one, zero);
  tv.forward_weight_h = Func("tv_forward_weight_h");
  tv.forward_weight_h(h) = select(h < height - 1, one, zero);
  const Expr gw = tv.image_gradient(x, y, c, b)[0] + (div_p(x + 1, y) - div_here) * tv.forward_weight_w(x);
  const Expr gh = tv.image_gradient(x, y, c, b)[1] + (div_p(x, y + 1) - div_here) * tv.forward_weight_h(y);
  p(x, y, c, b, (k + 1) % 2, strip) = step(pw(x, y), ph(x, y), gw, gh);
  tv.dual = p;

  const Expr last = m % 2;
  tv.identity = iterations == 1;
  tv.divergence = Func("tv_divergence");
  const Expr own_strip = h / strip_rows;
  tv.divergence(w, h, c, b) =
      select(tv.identity, zero,
             divergence_at([&](Expr xx, Expr yy) { return p(xx, yy, c, b, last, own_strip)[0]; },
                           [&](Expr xx, Expr yy) { return p(xx, yy, c, b, last, own_strip)[1]; }, w, h));
  tv.out = Func("tv_out");
  tv.out(w, h, c, b) = tv.image(w, h, c, b) + tv.divergence(w, h, c, b);
  return tv;
}

namespace {

// f + div p_m, or Tuple(f + div p_m, div p_m) `with_divergence`, from p_m(x, y, component) of band
// c, item b (read inside the image; 0 above and left of it, and everywhere when m = 0).
template <class LastDual>
Func vectorial_out(Func image, const Expr &steps, bool with_divergence, LastDual last_dual) {
  const Expr zero = cast(value_type(image), 0);
  const Expr div = select(steps > 0,
                          (select(w > 0, last_dual(w - 1, h, 0), zero) - last_dual(w, h, 0)) +
                              (select(h > 0, last_dual(w, h - 1, 1), zero) - last_dual(w, h, 1)),
                          zero);
  Func out("tv_vectorial");
  if (with_divergence) {
    out(w, h, c, b) = Tuple(image(w, h, c, b) + div, div);
  } else {
    out(w, h, c, b) = image(w, h, c, b) + div;
  }
  return out;
}

TvVectorial tv_vectorial_sweep(Func image, Expr width, Expr height, Expr bands, Expr weight, Expr iterations,
                               Expr strip_rows, bool with_divergence) {
  TvVectorial tv;
  tv.form = TvVectorialForm::sweep;
  tv.image = image;
  const Type t = value_type(image);
  const Expr zero = cast(t, 0);
  const Expr steps = max(iterations - 1, 0);  // m dual steps: step k makes p_{k+1} from p_k, p_0 = 0
  const Var row("row"), plane("plane"), strip("strip");
  tv.strip_rows = strip_rows;

  // Step k works on the rows [top - m + k, top + R + m - 1 - k) of a strip whose output rows start
  // at `top`: each step one row fewer each side, down to p_m on the strip's rows and the row above
  // (div p reads it). At time t it is on row top - m + t - k, so every step ends at the same time.
  // Phase 0 computes u_k one row ahead (from time -1, so that a step's first row has the row below;
  // down to the row past the image, whose values the last row's gradient does not use).
  tv.sweep = RDom(0, width, 0, bands, 0, 2, 0, steps, -1, strip_rows + 2 * steps, "tv_sweep");
  const RVar x = tv.sweep[0], band = tv.sweep[1], phase = tv.sweep[2], k = tv.sweep[3], time = tv.sweep[4];
  const Expr top = strip * strip_rows;
  const Expr y = top - steps + time - k;
  tv.sweep.where(select(phase == 0, time >= 2 * k - 1 && y >= -1, time >= 2 * k && y >= 0) && y < height);

  // A ring holds, at any time, rows from m below the newest one written: m + 1 rows (measured: m
  // rows give wrong results). u_k and u_{k+1} share one ring: step k has read a row before step
  // k + 1 overwrites it in the same time. So do p_k and p_{k+1} (one slot, not two: 28 x 256
  // strips' rings 840 -> 560 KiB, within a 1 MiB L2): step k's last read of p_k at its row is the
  // phase that overwrites it.
  const Expr ring = steps + 1;
  const auto ring_row = [&](const Expr &yy) { return yy % ring; };
  const Expr dual_plane = band;
  const auto u_plane = [&](const Expr &c_) { return bands + c_; };
  const auto last_dual_plane = [&](const Expr &c_) { return 2 * bands + c_; };
  Func &S = tv.state;
  S = Func("tv_state");
  S(w, row, plane, strip, b) = Tuple(undef(t), undef(t));

  // p_k, 0 outside the image and for k = 0 (the ring's rows and column -1 hold other values there).
  const auto p_w = [&](const Expr &xx, const Expr &yy) {
    return select(likely(k > 0) && likely(xx >= 0), S(xx, ring_row(yy), dual_plane, strip, b)[0], zero);
  };
  const auto p_h = [&](const Expr &xx, const Expr &yy) {
    return select(likely(k > 0) && likely(yy >= 0), S(xx, ring_row(yy), dual_plane, strip, b)[1], zero);
  };
  // u_k = f + div p_k of the row below (rows are clamped only for bounds inference: the sweep's
  // `where` keeps them inside the image), then grad u_k from the ring, 0 on the last column / row
  // (the column past the image is allocated there, its value never used).
  const Expr u_below = image(x, clamp(y + 1, 0, height - 1), band, b) + divergence_at(p_w, p_h, x, y + 1);
  const auto u = [&](const Expr &xx, const Expr &yy) { return S(xx, ring_row(yy), u_plane(band), strip, b)[0]; };
  const auto gradient = [&](const Expr &u_y1) {
    return std::make_pair(select(x < width - 1, u(x + 1, y) - u(x, y), zero),
                          select(y < height - 1, u_y1 - u(x, y), zero));
  };
  // Phase 0 stores, beside u_k of the row below, the norm of row y summed over the bands so far:
  // the band before's sum plus this band's |grad u|^2 (grad u_k needs that row below). The last
  // band stores the whole sum as the step's factor, once per pixel (`likely`: the first and the
  // last band get loops of their own).
  const auto [g_w0, g_h0] = gradient(u_below);
  const Expr norm_before = S(x, ring_row(y + 1), u_plane(band - 1), strip, b)[1];
  const Expr norm_so_far = select(likely(band > 0), norm_before, zero) + g_w0 * g_w0 + g_h0 * g_h0;
  const Expr norm_or_factor =
      select(likely(band < bands - 1), norm_so_far, chambolle_inverse_scale(norm_so_far, weight));
  // Phase 1: the row's new dual, from the ring's u and the stored factor.
  const auto [g_w, g_h] = gradient(u(x, y + 1));
  const Expr inverse_scale = S(x, ring_row(y + 1), u_plane(bands - 1), strip, b)[1];
  const Expr old_p_w = select(likely(k > 0), S(x, ring_row(y), dual_plane, strip, b)[0], zero);
  const Expr old_p_h = select(likely(k > 0), S(x, ring_row(y), dual_plane, strip, b)[1], zero);
  const Tuple next = chambolle_step(old_p_w, old_p_h, g_w, g_h, inverse_scale);

  // The two phases as one update (a schedule unrolls `phase`, which makes each a plain loop).
  const Expr last = k == steps - 1;
  const Expr site_row = select(phase == 0, ring_row(y + 1), last, clamp(y - top + 1, 0, strip_rows), ring_row(y));
  const Expr site_plane = select(phase == 0, u_plane(band), last, last_dual_plane(band), dual_plane);
  S(x, site_row, site_plane, strip, b) =
      Tuple(select(phase == 0, u_below, next[0]), select(phase == 0, norm_or_factor, next[1]));

  // out from the strip's stored p_m.
  const Expr h_strip = h / strip_rows;
  tv.out = vectorial_out(image, steps, with_divergence, [&](const Expr &xx, const Expr &yy, int component) {
    return S(xx, clamp(yy - h_strip * strip_rows + 1, 0, strip_rows), last_dual_plane(c), h_strip, b)[component];
  });
  return tv;
}

TvVectorial tv_vectorial_steps(Func image, Expr width, Expr height, Expr bands, Expr weight, Expr iterations,
                               Expr strip_rows, bool with_divergence) {
  TvVectorial tv;
  tv.form = TvVectorialForm::steps;
  tv.image = image;
  tv.strip_rows = strip_rows;
  const Type t = value_type(image);
  const Expr zero = cast(t, 0);
  const Expr steps = max(iterations - 1, 0);
  const Var plane("plane");
  tv.sweep = RDom(0, bands, 0, 2, 0, width, 0, height, 0, steps, "tv_steps");
  const RVar band = tv.sweep[0], phase = tv.sweep[1], x = tv.sweep[2], y = tv.sweep[3], k = tv.sweep[4];
  const Expr norm_plane = 2 * bands;
  Func &S = tv.state;
  S = Func("tv_state");
  S(w, h, plane, b) = Tuple(undef(t), undef(t));

  // p_k of this band, 0 outside the image and for k = 0 (the state holds other values there).
  const Expr dual_plane = (k % 2) * bands + band;
  const auto p_w = [&](const Expr &xx, const Expr &yy) {
    return select(likely(k > 0) && likely(xx >= 0), S(xx, yy, dual_plane, b)[0], zero);
  };
  const auto p_h = [&](const Expr &xx, const Expr &yy) {
    return select(likely(k > 0) && likely(yy >= 0), S(xx, yy, dual_plane, b)[1], zero);
  };
  // u_k = f + div p_k (f clamped for bounds inference only: the gradient does not use the column
  // or row past the image), grad u_k 0 on the last column / row.
  const auto u = [&](const Expr &xx, const Expr &yy) {
    return image(min(xx, width - 1), min(yy, height - 1), band, b) + divergence_at(p_w, p_h, xx, yy);
  };
  const Expr u_here = u(x, y);
  const Expr g_w = select(x < width - 1, u(x + 1, y) - u_here, zero);
  const Expr g_h = select(y < height - 1, u(x, y + 1) - u_here, zero);
  const Expr norm_so_far = select(band == 0, zero, S(x, y, norm_plane, b)[0]) + g_w * g_w + g_h * g_h;
  const Tuple next =
      chambolle_step(p_w(x, y), p_h(x, y), g_w, g_h, chambolle_inverse_scale(S(x, y, norm_plane, b)[0], weight));
  const Expr site_plane = select(phase == 0, norm_plane, ((k + 1) % 2) * bands + band);
  S(x, y, site_plane, b) = Tuple(select(phase == 0, norm_so_far, next[0]), select(phase == 0, norm_so_far, next[1]));

  const Expr last_plane = (steps % 2) * bands + c;
  tv.out = vectorial_out(image, steps, with_divergence, [&](const Expr &xx, const Expr &yy, int component) {
    return S(xx, yy, last_plane, b)[component];
  });
  return tv;
}

}  // namespace

TvVectorial tv_vectorial(Func image, Expr width, Expr height, Expr bands, Expr weight, Expr iterations, Expr strip_rows,
                         bool with_divergence, TvVectorialForm form) {
  return form == TvVectorialForm::sweep
             ? tv_vectorial_sweep(image, width, height, bands, weight, iterations, strip_rows, with_divergence)
             : tv_vectorial_steps(image, width, height, bands, weight, iterations, strip_rows, with_divergence);
}

namespace {
// x + lambda A^T normalized
Func projection_step(Func x, Func normalized, Func mask, const CassiGeometry &g, Expr lambda) {
  Func adjoint = cassi_adjoint(normalized, mask, g).x;
  Func data("data");
  data(w, h, c, b) = x(w, h, c, b) + lambda * adjoint(w, h, c, b);
  return data;
}

// GAP-TV's data step, then make_tv(data).
template <class Tv, class MakeTv>
GapTvIterationOf<Tv> gap_iteration(Func x, Func y, Func y1, Func mask, Func phi, const CassiGeometry &g,
                                   BandSumForm form, Expr lambda, Expr accelerate, MakeTv make_tv) {
  GapTvIterationOf<Tv> it;
  it.forward = cassi_forward(x, mask, g, form);
  Func yb = it.forward.y;
  it.y1 = Func("y1_updated");
  it.y1(w, h, b) = y1(w, h, b) + (y(w, h, b) - yb(w, h, b));
  it.normalized = Func("normalized");
  it.normalized(w, h, b) = (select(accelerate != 0, it.y1(w, h, b), y(w, h, b)) - yb(w, h, b)) / phi(w, h);
  it.data = projection_step(x, it.normalized, mask, g, lambda);
  it.tv = make_tv(it.data);
  return it;
}

// ADMM-TV's data step, then make_tv(x - b); out(make_tv's result) is Tuple(theta', b').
template <class Tv, class MakeTv, class MakeOut>
AdmmTvIterationOf<Tv> admm_iteration(Func theta, Func bvar, Func y, Func mask, Func phi, const CassiGeometry &g,
                                     BandSumForm form, Expr lambda, Expr gamma, MakeTv make_tv, MakeOut make_out) {
  AdmmTvIterationOf<Tv> it;
  it.sum = Func("theta_plus_b");
  it.sum(w, h, c, b) = theta(w, h, c, b) + bvar(w, h, c, b);
  it.forward = cassi_forward(it.sum, mask, g, form);
  it.normalized = Func("normalized");
  it.normalized(w, h, b) = (y(w, h, b) - it.forward.y(w, h, b)) / (phi(w, h) + gamma);
  it.data = projection_step(it.sum, it.normalized, mask, g, lambda);
  Func shifted("x_minus_b");
  shifted(w, h, c, b) = it.data(w, h, c, b) - bvar(w, h, c, b);
  it.tv = make_tv(shifted);
  it.out = make_out(it.tv);
  return it;
}
}  // namespace

GapTvIteration gap_tv_iteration(Func x, Func y, Func y1, Func mask, Func phi, const CassiGeometry &g, BandSumForm form,
                                Expr lambda, Expr accelerate, Expr tv_weight, Expr tv_iterations, Expr tv_strip_rows) {
  return gap_iteration<TvChambolle>(x, y, y1, mask, phi, g, form, lambda, accelerate, [&](Func data) {
    return tv_chambolle(data, g.width, g.height, tv_weight, tv_iterations, tv_strip_rows);
  });
}

GapTvVectorialIteration gap_tv_vectorial_iteration(Func x, Func y, Func y1, Func mask, Func phi, const CassiGeometry &g,
                                                   BandSumForm form, Expr lambda, Expr accelerate, Expr tv_weight,
                                                   Expr tv_iterations, Expr tv_strip_rows, TvVectorialForm tv_form) {
  return gap_iteration<TvVectorial>(x, y, y1, mask, phi, g, form, lambda, accelerate, [&](Func data) {
    return tv_vectorial(data, g.width, g.height, g.bands, tv_weight, tv_iterations, tv_strip_rows, false, tv_form);
  });
}

AdmmTvIteration admm_tv_iteration(Func theta, Func bvar, Func y, Func mask, Func phi, const CassiGeometry &g,
                                  BandSumForm form, Expr lambda, Expr gamma, Expr tv_weight, Expr tv_iterations,
                                  Expr tv_strip_rows) {
  return admm_iteration<TvChambolle>(
      theta, bvar, y, mask, phi, g, form, lambda, gamma,
      [&](Func image) { return tv_chambolle(image, g.width, g.height, tv_weight, tv_iterations, tv_strip_rows); },
      [](const TvChambolle &tv) {
        Func out("theta_b_next");
        out(w, h, c, b) = Tuple(tv.out(w, h, c, b), tv.divergence(w, h, c, b));
        return out;
      });
}

AdmmTvVectorialIteration admm_tv_vectorial_iteration(Func theta, Func bvar, Func y, Func mask, Func phi,
                                                     const CassiGeometry &g, BandSumForm form, Expr lambda, Expr gamma,
                                                     Expr tv_weight, Expr tv_iterations, Expr tv_strip_rows,
                                                     TvVectorialForm tv_form) {
  return admm_iteration<TvVectorial>(
      theta, bvar, y, mask, phi, g, form, lambda, gamma,
      [&](Func image) {
        return tv_vectorial(image, g.width, g.height, g.bands, tv_weight, tv_iterations, tv_strip_rows, true, tv_form);
      },
      [](const TvVectorial &tv) { return tv.out; });  // Tuple(f + div p, div p)
}

}  // namespace hpipe::alg
