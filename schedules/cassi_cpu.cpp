// CPU-vector schedules of the CASSI family.
//
// W4 A 3.28 ms (94% of BM_stream_read), Aᵀ 2.93 ms, A⁺ 2.99 ms, column-count inverse 3.06 ms (100 /
// 98 / 96% of BM_stream_nt_write, their streaming libraries' limit), shift back 4.59 ms (96% of
// BM_stream_nt_copy); 2-core AMD EPYC (Zen 5, AVX-512, 1 MiB L2, VM), make bench median of 5,
// 2026-11-27 (eleventh session). W4 A 5.66 ms (96% of BM_stream_read); 2-core AMD EPYC (Zen 3, AVX2,
// 512 KiB L2, VM), make bench median of 5, 2026-11-28 (thirteenth session).
#include <algorithm>

#include "schedules/cassi.h"
#include "schedules/common.h"
#include "schedules/prefetch.h"

namespace hpipe::sched {

using namespace Halide;

namespace {

// Cube-shaped outputs f(w, h, c, b), rows vectorized along w, and `measurement`, a measurement-
// shaped image g(w', h, b) they read (A+'s and the inverse's divided measurement), if defined,
// computed once beforehand. The B x C band planes are cut into about cube_tasks parallel tasks of
// whole planes, so that a task writes one contiguous run of memory (a W4 task: one batch item's
// 7 MB). Tasks of 32 rows of every band wrote 28 runs of 32 KiB each, which plain stores filled at
// half the speed of one long run on Zen 5 in its fast-memory spells (docs/performance-notes.md).
void schedule_cube_output(Func f, const Target &t, const CassiCpuKnobs &k, Func measurement = Func()) {
  Var w = arg(f, 0), c = arg(f, 2), b = arg(f, 3), plane("plane"), task("task"), planes_of_task("planes_of_task");
  const OutputImageParam out = f.output_buffer();
  Expr planes = out.dim(2).extent() * out.dim(3).extent();
  f.fuse(c, b, plane)
      .split(plane, task, planes_of_task, max(1, (planes + k.cube_tasks - 1) / k.cube_tasks), TailStrategy::GuardWithIf)
      .parallel(task)
      .vectorize(w, vector_lanes(t, value_type(f), k.vector_factor), TailStrategy::GuardWithIf);
  if (!measurement.defined()) return;
  Var mw = arg(measurement, 0), mh = arg(measurement, 1), mho("mho"), mhi("mhi"), mtask("mtask");
  // GuardWithIf: rows may be narrower than a vector, and ShiftInwards would then read before the image.
  measurement.compute_root()
      .split(mh, mho, mhi, k.rows_per_task, TailStrategy::GuardWithIf)
      .fuse(mho, arg(measurement, 2), mtask)
      .parallel(mtask)
      .vectorize(mw, vector_lanes(t, value_type(measurement), 1), TailStrategy::GuardWithIf);
}

// Steps along width (pixels per band) with code of their own in the band sums: 2, the step of
// W4 and of the published 28-band systems, and 1.
constexpr int kSpecializedSteps[] = {1, 2};

// Image-shaped outputs out(w, h, [b]) of a band sum: tasks of rows, rows vectorized. Width
// dispersion scatters, group of bands after group, blocks of `scatter_rows` rows into sums in L1,
// so each band's rows are one sequential read, still in cache when the edges read them again;
// height dispersion gathers dense rows, one vector of sums in registers (sum_per_vector) or a
// whole row at a time.
void schedule_band_sum(Func out, alg::BandSum s, const CassiCpuKnobs &k, const Target &t) {
  const int lanes = vector_lanes(t, value_type(out), k.vector_factor);
  Var w = arg(out, 0), h = arg(out, 1);
  Var ho("ho"), blocks("blocks"), block("block"), row("row"), wo("wo"), wi("wi"), task("task");
  // Rows split into blocks first, then blocks into tasks (about rows_per_task rows each): the
  // guard of the image's last rows stays on the innermost split. (Blocks split out of a task's
  // rows instead, both splits guarded, wrote past a buffer where A x is a compute_root stage of
  // GAP-TV: docs/performance-notes.md.)
  const int block_rows = std::min(k.scatter_rows, k.rows_per_task);
  out.split(h, blocks, row, block_rows, TailStrategy::GuardWithIf)
      .split(blocks, ho, block, (k.rows_per_task + block_rows - 1) / block_rows, TailStrategy::GuardWithIf);
  if (out.dimensions() == 3) {
    out.fuse(ho, arg(out, 2), task);
  } else {
    task = ho;
  }
  out.parallel(task).split(w, wo, wi, lanes, TailStrategy::GuardWithIf).vectorize(wi);
  // The steps of common CASSI systems get their own copy of the loop nest with the step a
  // constant: a group interior's loads then sit at constant offsets from one pointer per band.
  // With the step known only at run time, every band's index was recomputed and sign-extended
  // in each iteration and the 14 pointers spilled (about 50 integer instructions per 16
  // outputs of 7 bands); other steps still run that loop.
  for (const int step : kSpecializedSteps) out.specialize(s.axis == 0 && s.step == step);
  specialize_on_axis(out, s.axis);

  s.scatter.compute_at(out, block).vectorize(arg(s.scatter, 0), lanes, TailStrategy::GuardWithIf);
  // Vector lanes span columns of one band or group, and those land on distinct measurement
  // columns: no two lanes write the same sum (Halide cannot prove it through the offsets). Rows
  // inside the columns or vectors, so that an edge's test of its vector is made once per block.
  for (size_t i = 0; i < s.scatter_updates.size(); i++) {
    const RDom &r = s.scatter_updates[i];
    Stage update = s.scatter.update(i).allow_race_conditions();
    if (r.dimensions() == 3) {  // an edge: (lane, vector, band), its lanes one vector
      update.reorder(r.x, arg(s.scatter, 1), r.y, r.z).vectorize(r.x);
    } else {
      update.reorder(r.x, arg(s.scatter, 1), r.y).vectorize(r.x, lanes, TailStrategy::GuardWithIf);
    }
  }
  s.gather.compute_at(out, k.sum_per_vector ? wo : row).vectorize(arg(s.gather, 0), lanes, TailStrategy::GuardWithIf);
  s.gather.update().vectorize(arg(s.gather, 0), lanes, TailStrategy::GuardWithIf);
}

}  // namespace

void schedule_cpu(alg::CassiForward op, const Target &t, const CassiCpuKnobs &k) {
  schedule_band_sum(op.y, op.sum, k, t);
}

LoweringPasses cpu_lowering_passes(const alg::CassiForward &op, const Target &, const CassiCpuKnobs &k) {
  if (k.prefetch_ahead == 0) return {};
  return {std::make_shared<PrefetchAhead>(op.x_buffer, k.prefetch_ahead)};
}

void schedule_cpu(alg::CassiPhi op, const Target &t, const CassiCpuKnobs &k) {
  schedule_band_sum(op.phi, op.sum, k, t);
}

void schedule_cpu(alg::CassiAdjoint op, const Target &t, const CassiCpuKnobs &k) { schedule_cube_output(op.x, t, k); }

void schedule_cpu(alg::CassiPinv op, const Target &t, const CassiCpuKnobs &k) {
  // Phi is small (one image); compute it once, then y / Phi.
  schedule_cpu(op.phi, t, k);
  op.phi.phi.compute_root();
  schedule_cube_output(op.x, t, k, op.normalized);
}

void schedule_cpu(alg::CassiPinvAlpha op, const Target &t, const CassiCpuKnobs &k) {
  // alpha's integer divisions once per column, and the mask's inverse once per mask element
  // (not per cube element: the batch shares the mask); before and after: docs/performance-notes.md.
  // A shared mask is inverted once, a per-band one once per band; inverting per task and band with
  // the batch innermost instead measured no faster and leaves only H / rows_per_task tasks.
  op.alpha.compute_root();
  Var mw = arg(op.mask_inverse, 0), mc = arg(op.mask_inverse, 2);
  op.mask_inverse.compute_root().parallel(mc).vectorize(mw, vector_lanes(t, value_type(op.mask_inverse), 1),
                                                        TailStrategy::GuardWithIf);
  schedule_cube_output(op.x, t, k, op.normalized);
}

void schedule_cpu(alg::CassiShift op, const Target &t, const CassiCpuKnobs &k) { schedule_cube_output(op.out, t, k); }

}  // namespace hpipe::sched
