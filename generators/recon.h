// Iterative CASSI reconstruction: Chambolle's total-variation denoiser and one iteration of
// GAP-TV and of ADMM-TV, built on the CASSI operators of generators/cassi.h. Algorithms only
// (schedules live in schedules/recon_*.cpp).
//
// Layout as in generators/cassi.h: cube x(w, h, c, b), measurement y(w', h', b), mask m(w, h, c),
// Phi(w', h') = sum_c m^2 displaced, with 0 replaced by 1.
#pragma once

#include "Halide.h"
#include "generators/cassi.h"
#include "generators/common.h"

namespace hpipe::alg {

// Chambolle's projection algorithm for the ROF problem, applied to every (band, batch) image of a
// cube independently, exactly as skimage.restoration.denoise_tv_chambolle does it per channel with
// max_num_iter = `iterations` and eps = 0 (no early stop), tau = 1/4:
//   p_0 = 0;  for k = 0 .. n-2:  u_k = f + div p_k,  g = grad u_k (forward differences, 0 on the
//   last row/column),  p_{k+1} = (p_k - tau g) / (1 + tau / weight * |g|);   out = f + div p_{n-1}
// (skimage's n-th dual update is never used, so n iterations make n - 1 dual steps; n = 1 returns f).
struct TvChambolle {
  Halide::Func image;           // f(w, h, c, b): the image being denoised, a Func a schedule may place
  Halide::Expr strip_rows;      // R: the output's rows come in strips of R, each from a window of its own
  Halide::Func image_gradient;  // grad f = Tuple(f_w, f_h), constant over the steps: a schedule may store it
  Halide::Func dual;            // p(w, h, c, b, slot, strip) = Tuple(p_w, p_h) over the strip's window of rows;
                                // step k reads slot k % 2, writes (k + 1) % 2; updates: the frame, step 0,
                                // steps 1 .. n - 2
  Halide::RDom frame;       // (along, side, slot): the pixels around the window, where the dual is 0; no slots if n = 1
  Halide::RDom first_step;  // (x, row, once): step 0, an update of its own that reads no dual; once: 1 pass, 0 if n = 1
  Halide::RDom steps;       // (x, row, k) over the window and the dual steps k = 1 .. n - 2
  Halide::Func forward_weight_w, forward_weight_h;  // (i): 1, and 0 on the last column / row
  Halide::Expr identity;                            // n == 1: out = f, the dual unused (a schedule specializes on it)
  Halide::Func divergence;                          // div p_{n-1}(w, h, c, b), with p = 0 outside the image
  Halide::Func out;                                 // f + divergence
};
TvChambolle tv_chambolle(Halide::Func image, Halide::Expr width, Halide::Expr height, Halide::Expr weight,
                         Halide::Expr iterations, Halide::Expr strip_rows);

// The vectorial (band-coupled) variant (Bresson & Chan, "Fast dual minimization of the vectorial
// total variation norm", 2008): the same steps, but every band's dual is divided by the one
// factor 1 + tau / weight * sqrt(sum_c |grad u_c|^2) of its pixel, so edges are shared by the
// bands. The result is f + div p, or Tuple(f + div p, div p) `with_divergence` (ADMM's b').
//
// The norm couples every band of a pixel. Two layouts of the steps (TvVectorialForm):
//
// `sweep` (CPU): a step at a row reads the step before at the rows beside it, so all the steps run
// in one sweep down the image, a wavefront: at time t, step k works on the row t - k below the
// sweep's first, whose inputs step k - 1 finished at time t - 1 or t. The duals then live in a
// ring of a few rows per band (cache-sized whatever the image), written in one pass per step
// instead of one pass over the cube per step. The image is cut into strips of `strip_rows` rows,
// each swept on its own from (iterations - 1) rows above to as many below (the rows a strip's
// steps depend on; recomputed by its neighbours), so that strips run in parallel.
// `state`(w, row, plane, strip, b) = Tuple(., .) holds everything the sweep keeps; its planes are:
// the dual (a ring of rows per band; step k overwrites p_k of its row with p_{k+1}: once step k
// has its row's u_k, only step k + 1 reads that row again, and it wants p_{k+1}), u_k = f + div p_k
// beside the norm summed over the bands so far (a ring of rows per band, so that grad u reads u,
// not p at ten places), and the last dual p_{n-1} of the strip's rows and the row above them. For
// every (time, step) the sweep runs two phases over the bands: u_k of the row below with the norm
// of the row so far (the last band stores the step's factor 1 / (1 + tau / weight |grad u|) instead,
// once per pixel); then the row's new dual.
//
// `steps` (GPU): each step is one pass over the cube whose pixels are independent (a wavefront
// leaves a GPU a few rows of work at a time): `state`(w, h, plane, b) = Tuple(., .) holds the
// dual's two slots of every band (p_k in slot k % 2) and a plane for the norm; for each pixel
// phase 0 sums |grad u_k|^2 over the bands, phase 1 writes every band's p_{k+1}. grad u_k is
// recomputed from p_k in both phases (its reads are neighbours', cached). `strip_rows` is unused.
enum class TvVectorialForm { sweep, steps };
inline TvVectorialForm tv_vectorial_form(const Halide::Target &t) {
  return t.has_gpu_feature() ? TvVectorialForm::steps : TvVectorialForm::sweep;
}
struct TvVectorial {
  TvVectorialForm form;
  Halide::Func image;  // f(w, h, c, b): the image being denoised, a Func a schedule may place
  Halide::Func state;
  // sweep: (x, band, phase, step, time); steps: (band, phase, x, y, step). `phase` has a constant
  // extent, and a schedule of the sweep must unroll it: with `phase` a loop, Halide 14 gives the
  // sweep wrong results (0.1 off the reference at 3 iterations, JIT on the CPU, 2026-11-25).
  Halide::RDom sweep;
  Halide::Func out;  // f + div p_{n-1}, or Tuple(f + div p_{n-1}, div p_{n-1}), (w, h, c, b)
  Halide::Expr strip_rows;
};
TvVectorial tv_vectorial(Halide::Func image, Halide::Expr width, Halide::Expr height, Halide::Expr bands,
                         Halide::Expr weight, Halide::Expr iterations, Halide::Expr strip_rows, bool with_divergence,
                         TvVectorialForm form);

// One accelerated GAP-TV iteration (Yuan 2016; y1 starts at 0):
//   yb = A x;  y1' = y1 + (y - yb);  x' = TV(x + lambda A^T((y1' - yb) / Phi))
// and the plain GAP step x' = TV(x + lambda A^T((y - yb) / Phi)) when `accelerate` is 0. The TV is
// per band (TvChambolle) or band-coupled (TvVectorial, in the form tv_vectorial_form gives).
template <class Tv>
struct GapTvIterationOf {
  CassiForward forward;     // yb = A x
  Halide::Func y1;          // y1 + (y - yb)
  Halide::Func normalized;  // (y1' - yb) / Phi, or (y - yb) / Phi
  Halide::Func data;        // x + lambda A^T normalized: the Euclidean projection step
  Tv tv;                    // TV(data); tv.out is x'
};
using GapTvIteration = GapTvIterationOf<TvChambolle>;
using GapTvVectorialIteration = GapTvIterationOf<TvVectorial>;
GapTvIteration gap_tv_iteration(Halide::Func x, Halide::Func y, Halide::Func y1, Halide::Func mask, Halide::Func phi,
                                const CassiGeometry &g, BandSumForm form, Halide::Expr lambda, Halide::Expr accelerate,
                                Halide::Expr tv_weight, Halide::Expr tv_iterations, Halide::Expr tv_strip_rows);
GapTvVectorialIteration gap_tv_vectorial_iteration(Halide::Func x, Halide::Func y, Halide::Func y1, Halide::Func mask,
                                                   Halide::Func phi, const CassiGeometry &g, BandSumForm form,
                                                   Halide::Expr lambda, Halide::Expr accelerate, Halide::Expr tv_weight,
                                                   Halide::Expr tv_iterations, Halide::Expr tv_strip_rows,
                                                   TvVectorialForm tv_form);

// One ADMM-TV iteration (Yuan's admm_denoise):
//   v = theta + b;  x = v + lambda A^T((y - A v) / (Phi + gamma));  theta' = TV(x - b);  b' = b - (x - theta')
// Since theta' = (x - b) + div p, b' = div p: `out` is Tuple(theta', b') from one TV pass.
template <class Tv>
struct AdmmTvIterationOf {
  Halide::Func sum;         // theta + b
  CassiForward forward;     // A (theta + b)
  Halide::Func normalized;  // (y - A v) / (Phi + gamma)
  Halide::Func data;        // x = v + lambda A^T normalized
  Tv tv;                    // TV(x - b)
  Halide::Func out;         // Tuple(theta', b')
};
using AdmmTvIteration = AdmmTvIterationOf<TvChambolle>;
using AdmmTvVectorialIteration = AdmmTvIterationOf<TvVectorial>;
AdmmTvIteration admm_tv_iteration(Halide::Func theta, Halide::Func b, Halide::Func y, Halide::Func mask,
                                  Halide::Func phi, const CassiGeometry &g, BandSumForm form, Halide::Expr lambda,
                                  Halide::Expr gamma, Halide::Expr tv_weight, Halide::Expr tv_iterations,
                                  Halide::Expr tv_strip_rows);
AdmmTvVectorialIteration admm_tv_vectorial_iteration(Halide::Func theta, Halide::Func b, Halide::Func y,
                                                     Halide::Func mask, Halide::Func phi, const CassiGeometry &g,
                                                     BandSumForm form, Halide::Expr lambda, Halide::Expr gamma,
                                                     Halide::Expr tv_weight, Halide::Expr tv_iterations,
                                                     Halide::Expr tv_strip_rows, TvVectorialForm tv_form);

// Estimates: one 28-band 256 x 256 scene (the synthetic scene of hpipe synth), S = 2, 5 TV iterations.
struct ReconEstimates {
  CassiEstimates cassi{1};  // batch 1
  int tv_iterations = 5;
};

}  // namespace hpipe::alg
