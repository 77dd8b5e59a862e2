// CUDA schedules of the CASSI family: one thread per output pixel, blocks of block_w x block_h,
// bands looped inside the thread.
//
// H100 80GB HBM3 (sm_80 PTX), default knobs, W4 (16, 28, 256, 256), S = 2, `hpipe_bench` median
// of 3 against BM_cuda_copy (2.97 TB/s): A 0.088 ms (47%), Aᵀ 0.135 ms (31%), A⁺ 0.169 ms (24%),
// column-count inverse 0.235 ms; PyTorch's slice-add loop takes 0.768 ms for A, its crops 0.337 ms
// for Aᵀ. hpipe-tune's bundle found at most 10% (A: block 64 x 1).
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

void schedule_cuda(alg::CassiPhi op, const Target &, const CassiCudaKnobs &k) {
  schedule_band_sum(op.phi, op.sum, k);
}

void schedule_cuda(alg::CassiAdjoint op, const Target &, const CassiCudaKnobs &k) {
  schedule_tiles(op.x, k);
}

void schedule_cuda(alg::CassiPinv op, const Target &t, const CassiCudaKnobs &k) {
  schedule_cuda(op.phi, t, k);
  op.phi.phi.compute_root();
  schedule_tiles(op.x, k);  // y / Phi is recomputed per output pixel: cheaper than a pass over memory
}

void schedule_cuda(alg::CassiPinvAlpha op, const Target &, const CassiCudaKnobs &k) {
  schedule_tiles(op.x, k);
}

void schedule_cuda(alg::CassiShift op, const Target &, const CassiCudaKnobs &k) {
  schedule_tiles(op.out, k);
}

}  // namespace hpipe::sched
