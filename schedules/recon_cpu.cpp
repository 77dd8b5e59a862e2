// CPU-vector schedules of the reconstruction family.
//
// One task per strip of rows of a (band, batch) image: the window's gradient and both slots of its
// dual (6 planes; the runtime sizes strips to a core's L2, or 2 MiB if less) stay in cache while every
// Chambolle step sweeps them with rows vectorized along width. The cube-sized data step is computed
// into the task's image, so one GAP-TV iteration reads x twice (A x, then the data step) and writes
// x' once. A TV step issues about 29 vector arithmetic instructions per 16 pixels
// (docs/performance-notes.md).
//
// TV 1.48 ms, GAP-TV iteration 1.66 ms, ADMM-TV 1.98 ms (28 x 256 x 256, 5 TV steps), TV on 7 x 512
// x 512 1.56 ms; vectorial TV (one sweep) 1.92 ms, GAP-TV / ADMM-TV with it 2.33 / 2.84 ms (1.30x /
// 1.40x / 1.43x per band); 2-core AMD EPYC (Zen 5, AVX-512, VM), make bench median of 5, 2026-11-27
// (seventh session).
#include "schedules/cassi.h"
#include "schedules/common.h"
#include "schedules/recon.h"

namespace hpipe::sched {

using namespace Halide;

namespace {

// The TV output out(w, h, c, b) (or a Tuple beside it): one parallel task per strip of an image,
// the strip's dual computed inside the task. Returns the task loop.
Var schedule_tv(const alg::TvChambolle &tv, Func out, const Target &t, const ReconCpuKnobs &k) {
  const int lanes = vector_lanes(t, value_type(out), k.vector_factor);
  Var task("task"), strip("strip"), row("row");
  out.split(arg(out, 1), strip, row, tv.strip_rows, TailStrategy::GuardWithIf)
      .fuse(strip, arg(out, 2), task)
      .fuse(task, arg(out, 3), task)
      .parallel(task)
      .vectorize(arg(out, 0), lanes, TailStrategy::GuardWithIf);
  Func dual = tv.dual;
  // Rows padded to whole vectors and the interior starting on one, so that the unshifted loads
  // and the stores do not straddle cache lines (12-15% of a TV call: docs/performance-notes.md).
  const Var width = arg(dual, 0);
  dual.compute_at(out, task).align_storage(width, lanes).align_bounds(width, lanes);
  dual.update(0).unroll(tv.frame.y);  // the frame: 2 (w + rows + 2) scalar stores per slot, a loop a side
  dual.update(1).vectorize(tv.first_step.x, lanes, TailStrategy::GuardWithIf);
  // Step k reads slot k % 2 and writes the other: vectors along a row never overlap what they read.
  dual.update(2).allow_race_conditions().vectorize(tv.steps.x, lanes, TailStrategy::GuardWithIf);
  // The steps' 0/1 weights: computed once per task, then loaded by the steps.
  for (Func weight : {tv.forward_weight_w, tv.forward_weight_h}) {
    weight.compute_at(out, task).vectorize(arg(weight, 0), lanes, TailStrategy::GuardWithIf);
  }
  // grad f once per task: the steps then read no clamped neighbour of f (docs/performance-notes.md).
  Func image_gradient = tv.image_gradient;
  image_gradient.compute_at(out, task).vectorize(arg(image_gradient, 0), lanes, TailStrategy::GuardWithIf);
  // One iteration (the vectorial GAP-TV / ADMM-TV data step) neither fills nor reads a dual.
  out.specialize(tv.identity);
  return task;
}

// A measurement-sized stage f(w', h', b): parallel over rows, vectorized.
void schedule_measurement(Func f, const Target &t, const ReconCpuKnobs &k) {
  Var ho("ho"), hi("hi"), task("task");
  f.compute_root()
      .split(arg(f, 1), ho, hi, k.rows_per_task, TailStrategy::GuardWithIf)
      .fuse(ho, arg(f, 2), task)
      .parallel(task)
      .vectorize(arg(f, 0), vector_lanes(t, value_type(f), k.vector_factor), TailStrategy::GuardWithIf);
}

void schedule_forward(alg::CassiForward forward, const Target &t, const ReconCpuKnobs &k) {
  schedule_cpu(forward, t, CassiCpuKnobs{k.vector_factor, k.rows_per_task, 1});
  forward.y.compute_root();
}

// The image the TV denoises, computed once per task (it is read by every Chambolle step).
void compute_image_in_task(Func image, Func out, Var task, const Target &t, const ReconCpuKnobs &k) {
  image.compute_at(out, task).vectorize(arg(image, 0), vector_lanes(t, value_type(image), k.vector_factor),
                                        TailStrategy::GuardWithIf);
}

// The vectorial TV's output `out` (tv.out): one task per strip of a batch item; the sweep's rings
// (~1 MiB at 28 x 256, 5 iterations) stay in the core's L2; each phase a loop over a row,
// vectorized. Returns the task loop.
Var schedule_tv(const alg::TvVectorial &tv, Func out, const Target &t, const ReconCpuKnobs &k) {
  _halide_user_assert(tv.form == alg::TvVectorialForm::sweep)
      << "the CPU schedule of tv_vectorial is for its sweep form";
  const int lanes = vector_lanes(t, value_type(out), k.sweep_vector_factor);
  Var w = arg(out, 0), h = arg(out, 1), c = arg(out, 2), b = arg(out, 3), ho("ho"), hi("hi"), task("task");
  out.split(h, ho, hi, tv.strip_rows, TailStrategy::GuardWithIf)
      .reorder(w, c, hi, ho, b)
      .fuse(ho, b, task)
      .parallel(task)
      .vectorize(w, lanes, TailStrategy::GuardWithIf);
  // The state stored by ring row, each holding that row of every plane, so that a phase's loop over
  // the bands walks each group of planes (duals, u) as one stream; rows padded to whole natural
  // vectors with column 0 on one, so that the unshifted loads and the stores do not straddle cache
  // lines: together 1.5x faster (docs/performance-notes.md, 2026-11-27, seventh session).
  Func state = tv.state;
  const int natural_lanes = vector_lanes(t, value_type(out), 1);
  state.compute_at(out, task)
      .reorder_storage(arg(state, 0), arg(state, 2), arg(state, 1))
      .align_storage(arg(state, 0), natural_lanes)
      .align_bounds(arg(state, 0), natural_lanes);
  // Lanes write distinct pixels of one plane and read other planes: no race (see generators/recon.h).
  state.update().allow_race_conditions().vectorize(tv.sweep[0], lanes, TailStrategy::GuardWithIf).unroll(tv.sweep[2]);
  return task;
}

// An iteration of GAP-TV or ADMM-TV, per band or vectorial: A x and the measurement-sized stages
// computed once, then the data step into each TV task's image (for the vectorial TV, a strip's rows
// and the rows it recomputes each side), which every step reads; no cube between them in memory.
template <class Tv>
void schedule_iteration(const alg::GapTvIterationOf<Tv> &op, const Target &t, const ReconCpuKnobs &k) {
  schedule_forward(op.forward, t, k);
  schedule_measurement(op.y1, t, k);
  schedule_measurement(op.normalized, t, k);
  Var task = schedule_tv(op.tv, op.tv.out, t, k);
  compute_image_in_task(op.tv.image, op.tv.out, task, t, k);
}
template <class Tv>
void schedule_iteration(const alg::AdmmTvIterationOf<Tv> &op, const Target &t, const ReconCpuKnobs &k) {
  schedule_forward(op.forward, t, k);
  schedule_measurement(op.normalized, t, k);
  Var task = schedule_tv(op.tv, op.out, t, k);
  compute_image_in_task(op.tv.image, op.out, task, t, k);
}

}  // namespace

void schedule_cpu(alg::TvChambolle op, const Target &t, const ReconCpuKnobs &k) {
  schedule_tv(op, op.out, t, k);  // the image is the input itself: read in place
}

void schedule_cpu(alg::TvVectorial op, const Target &t, const ReconCpuKnobs &k) {
  schedule_tv(op, op.out, t, k);  // the image is the input itself
}

void schedule_cpu(alg::GapTvIteration op, const Target &t, const ReconCpuKnobs &k) { schedule_iteration(op, t, k); }
void schedule_cpu(alg::GapTvVectorialIteration op, const Target &t, const ReconCpuKnobs &k) {
  schedule_iteration(op, t, k);
}
void schedule_cpu(alg::AdmmTvIteration op, const Target &t, const ReconCpuKnobs &k) { schedule_iteration(op, t, k); }
void schedule_cpu(alg::AdmmTvVectorialIteration op, const Target &t, const ReconCpuKnobs &k) {
  schedule_iteration(op, t, k);
}

}  // namespace hpipe::sched
