// CUDA schedules of the CASSI family: one thread per output pixel, blocks of block_w x block_h,
// bands looped inside the thread.
//
// W4 A 0.088 ms, Aᵀ 0.135 ms, A⁺ 0.169 ms (47 / 31 / 24% of BM_cuda_copy); H100 80GB HBM3 (sm_80 PTX), hpipe_bench
// median of 3, 2026-11-22.
#include "schedules/cassi.h"
#include "schedules/common.h"

namespace hpipe::sched {

using namespace Halide;

namespace {

// f(w, h, rest...) as a grid of blocks over (w, h) with the remaining dimensions fused into the
// third block dimension. Returns the innermost thread loop.
Var schedule_tiles(Func f, const CassiCudaKnobs &k) { return gpu_tile_image(f, k.block_w, k.block_h); }

// A per-thread band sum (the gather form) feeding out(w, h, ...): each thread reduces over
// bands in registers.
void schedule_band_sum(Func out, alg::BandSum s, const CassiCudaKnobs &k) {
  // Both stages of the sum run inside the thread, so the update is scheduled with it.
  s.gather.compute_at(out, schedule_tiles(out, k));
}

}  // namespace

void schedule_cuda(alg::CassiForward op, const Target &, const CassiCudaKnobs &k) {
  schedule_band_sum(op.y, op.sum, k);
}

void schedule_cuda(alg::CassiPhi op, const Target &, const CassiCudaKnobs &k) { schedule_band_sum(op.phi, op.sum, k); }

void schedule_cuda(alg::CassiAdjoint op, const Target &, const CassiCudaKnobs &k) { schedule_tiles(op.x, k); }

void schedule_cuda(alg::CassiPinv op, const Target &t, const CassiCudaKnobs &k) {
  schedule_cuda(op.phi, t, k);
  op.phi.phi.compute_root();
  schedule_tiles(op.x, k);  // y / Phi is recomputed per output pixel: cheaper than a pass over memory
}

void schedule_cuda(alg::CassiPinvAlpha op, const Target &, const CassiCudaKnobs &k) { schedule_tiles(op.x, k); }

void schedule_cuda(alg::CassiShift op, const Target &, const CassiCudaKnobs &k) { schedule_tiles(op.out, k); }

}  // namespace hpipe::sched
