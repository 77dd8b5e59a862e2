// CUDA schedules of the CASSI family: one thread per output pixel, blocks of block_w x block_h,
// each dispersion axis in a kernel of its own. A thread handles bands_per_thread bands in one
// unrolled step: the steps of a band sum, or that many bands of its pixel in a cube output. With
// one band at a time, each thread had one load in flight, too few to cover the memory latency
// (docs/performance-notes.md).
//
// W4 A 0.071 ms, Aᵀ 0.058 ms, A⁺ 0.079 ms, column-count inverse 0.090 ms (58 / 72 / 53 / 46% of BM_cuda_copy);
// H100 80GB HBM3 (sm_80 PTX), hpipe_bench median of 3, 2026-11-25.
#include "schedules/cassi.h"
#include "schedules/common.h"

namespace hpipe::sched {

using namespace Halide;

namespace {

// A per-thread band sum (the gather form) feeding out(w, h, ...): each thread reduces over the
// bands in registers, bands_per_thread of them per unrolled step.
void schedule_band_sum(Func out, alg::BandSum s, const CassiCudaKnobs &k) {
  // Both stages of the sum run inside the thread, so the update is scheduled with it.
  s.gather.compute_at(out, gpu_tile_image(out, k.block_w, k.block_h));
  RVar outer("bands_outer"), inner("bands_inner");
  s.gather.update().split(s.bands.x, outer, inner, k.bands_per_thread, TailStrategy::GuardWithIf).unroll(inner);
  specialize_on_axis(out, s.axis);
}

// A cube output f(w, h, c, b): each thread writes bands_per_thread bands of its pixel, unrolled.
void schedule_cube(Func f, const Expr &axis, const CassiCudaKnobs &k) {
  const Var w = arg(f, 0), h = arg(f, 1), c = arg(f, 2), b = arg(f, 3);
  Var wo("wo"), ho("ho"), wi("wi"), hi("hi"), co("co"), ci("ci"), blocks("blocks");
  f.split(c, co, ci, k.bands_per_thread, TailStrategy::GuardWithIf)
      .gpu_tile(w, h, wo, ho, wi, hi, k.block_w, k.block_h, TailStrategy::GuardWithIf)
      .reorder(ci, wi, hi, wo, ho, co, b)
      .unroll(ci)
      .fuse(co, b, blocks)
      .gpu_blocks(blocks);
  specialize_on_axis(f, axis);
}

}  // namespace

void schedule_cuda(alg::CassiForward op, const Target &, const CassiCudaKnobs &k) {
  schedule_band_sum(op.y, op.sum, k);
}

void schedule_cuda(alg::CassiPhi op, const Target &, const CassiCudaKnobs &k) { schedule_band_sum(op.phi, op.sum, k); }

void schedule_cuda(alg::CassiAdjoint op, const Target &, const CassiCudaKnobs &k) { schedule_cube(op.x, op.axis, k); }

void schedule_cuda(alg::CassiPinv op, const Target &t, const CassiCudaKnobs &k) {
  schedule_cuda(op.phi, t, k);
  op.phi.phi.compute_root();
  schedule_cube(op.x, op.phi.sum.axis, k);  // y / Phi is recomputed per output pixel: cheaper than a pass over memory
}

void schedule_cuda(alg::CassiPinvAlpha op, const Target &, const CassiCudaKnobs &k) {
  // alpha once per column, in its own small kernel: inline, each cube element paid its two integer
  // divisions by the step.
  Var along = arg(op.alpha, 0), block("block"), thread("thread");
  op.alpha.compute_root().gpu_tile(along, block, thread, k.block_w * k.block_h, TailStrategy::GuardWithIf);
  schedule_cube(op.x, op.axis, k);
}

void schedule_cuda(alg::CassiShift op, const Target &, const CassiCudaKnobs &k) { schedule_cube(op.out, op.axis, k); }

}  // namespace hpipe::sched
