// CUDA schedules of the CASSI family: one thread per output pixel, blocks of block_w x block_h,
// each dispersion axis in a kernel of its own. A thread handles bands_per_thread bands in one
// unrolled step (the steps of a band sum, or that many bands of its pixel in a cube output) of
// items_per_thread batch items, which share the mask's loads. With one band at a time, each of
// Aᵀ's threads had one load in flight, too few to cover the memory latency; A's band sum was
// measured fastest that way all the same (docs/performance-notes.md; its defaults in cassi.h).
//
// W4 A 0.066 ms, Aᵀ 0.060 ms, A⁺ 0.073 ms, column-count inverse 0.073 ms (69 / 76 / 63 / 63% of
// BM_cuda_copy's 2.69 TB/s in the same run; A and the inverse with their own knobs, cassi.h);
// H100 80GB HBM3 (sm_80 PTX), hpipe_bench median of 3, 2026-11-27.
#include "schedules/cassi.h"
#include "schedules/common.h"

namespace hpipe::sched {

using namespace Halide;

namespace {

// A per-thread band sum (the gather form) feeding out(w, h, ...): each thread reduces over the
// bands in registers, bands_per_thread of them per unrolled step.
void schedule_band_sum(Func out, alg::BandSum s, const CassiCudaKnobs &k) {
  // Both stages of the sum run inside the thread, so the update is scheduled with it.
  RVar outer("bands_outer"), inner("bands_inner");
  if (out.dimensions() == 3 && k.items_per_thread > 1) {
    // A thread's items innermost in each band step, so that one mask load serves them all.
    const Var w = arg(out, 0), h = arg(out, 1), b = arg(out, 2);
    Var wo("wo"), ho("ho"), wi("wi"), hi("hi"), bo("bo"), bi("bi");
    out.split(b, bo, bi, k.items_per_thread, TailStrategy::GuardWithIf)
        .gpu_tile(w, h, wo, ho, wi, hi, k.block_w, k.block_h, TailStrategy::GuardWithIf)
        .reorder(bi, wi, hi, wo, ho, bo)
        .unroll(bi)
        .gpu_blocks(bo);
    s.gather.compute_at(out, wi).unroll(arg(s.gather, 2));
    s.gather.update()
        .split(s.bands.x, outer, inner, k.bands_per_thread, TailStrategy::GuardWithIf)
        .reorder(arg(s.gather, 2), inner, outer)
        .unroll(arg(s.gather, 2))
        .unroll(inner);
  } else {
    s.gather.compute_at(out, gpu_tile_image(out, k.block_w, k.block_h));
    s.gather.update().split(s.bands.x, outer, inner, k.bands_per_thread, TailStrategy::GuardWithIf).unroll(inner);
  }
  specialize_on_axis(out, s.axis);
}

// A cube output f(w, h, c, b): each thread writes bands_per_thread bands of items_per_thread items
// of its pixel, unrolled. Returns the innermost loop over blocks.
Var schedule_cube(Func f, const Expr &axis, const CassiCudaKnobs &k) {
  const Var w = arg(f, 0), h = arg(f, 1), c = arg(f, 2), b = arg(f, 3);
  Var wo("wo"), ho("ho"), wi("wi"), hi("hi"), co("co"), ci("ci"), bo("bo"), bi("bi"), blocks("blocks");
  f.split(c, co, ci, k.bands_per_thread, TailStrategy::GuardWithIf)
      .split(b, bo, bi, k.items_per_thread, TailStrategy::GuardWithIf)
      .gpu_tile(w, h, wo, ho, wi, hi, k.block_w, k.block_h, TailStrategy::GuardWithIf)
      .reorder(bi, ci, wi, hi, wo, ho, co, bo)
      .unroll(bi)
      .unroll(ci)
      .fuse(co, bo, blocks)
      .gpu_blocks(blocks);
  specialize_on_axis(f, axis);
  return wo;
}

// The cube kernel of A+ or of the column-count inverse, with the measurement divided where
// divide_measurement says: per cube element (normalized inline), in a kernel of its own over
// (w', h') with the batch in the blocks' third dimension, or per block: the measurement pixels a
// block's cube tile reads, divided into its shared memory by its threads, block_w x block_h at a
// time (the tile's bands_per_thread bands read (bands_per_thread - 1) |S| more along the axis).
void schedule_divided_cube(Func x, Func normalized, const Expr &axis, const Expr &step, const CassiCudaKnobs &k) {
  if (k.divide_measurement == 1) {
    normalized.compute_root();
    gpu_tile_image(normalized, k.block_w, k.block_h);
  }
  const Var block = schedule_cube(x, axis, k);
  if (k.divide_measurement == 2) {
    const Var w = arg(normalized, 0), h = arg(normalized, 1), b = arg(normalized, 2);
    Var wo("normalized_wo"), ho("normalized_ho"), wi("normalized_wi"), hi("normalized_hi");
    // The region's size bounded by the knobs and S: the region of a tail block is smaller, so
    // without a bound Halide 14 sized the shared memory by a loop over every block on the host
    // before each launch (28,672 blocks at W4 with the family's knobs).
    const Expr spread = (k.bands_per_thread - 1) * cast<int>(abs(step));
    normalized.compute_at(x, block)
        .bound_storage(w, k.block_w + select(axis == 0, spread, 0))
        .bound_storage(h, k.block_h + select(axis == 1, spread, 0))
        .bound_storage(b, k.items_per_thread)
        .split(w, wo, wi, k.block_w, TailStrategy::GuardWithIf);
    if (k.block_h == 1) {
      // A split by 1 made Halide 14's bounds of the measurement twice its height (the call failed
      // its bounds check); the rows are a serial loop.
      normalized.gpu_threads(wi);
    } else {
      normalized.split(h, ho, hi, k.block_h, TailStrategy::GuardWithIf).reorder(wi, hi, wo, ho).gpu_threads(wi, hi);
    }
  }
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
  schedule_divided_cube(op.x, op.normalized, op.phi.sum.axis, op.phi.sum.step, k);
}

void schedule_cuda(alg::CassiPinvAlpha op, const Target &, const CassiCudaKnobs &k) {
  if (k.divide_measurement == 0) {
    // alpha once per column, in its own small kernel: inline, each cube element paid its two integer
    // divisions by the step. Where the measurement is divided once, alpha is inline there.
    Var along = arg(op.alpha, 0), block("block"), thread("thread");
    op.alpha.compute_root().gpu_tile(along, block, thread, k.block_w * k.block_h, TailStrategy::GuardWithIf);
  }
  schedule_divided_cube(op.x, op.normalized, op.axis, op.step, k);
}

void schedule_cuda(alg::CassiShift op, const Target &, const CassiCudaKnobs &k) { schedule_cube(op.out, op.axis, k); }

}  // namespace hpipe::sched
