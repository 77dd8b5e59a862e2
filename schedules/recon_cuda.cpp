// CUDA schedules of the reconstruction family: every stage is a grid over (w, h) with the other
// dimensions in the third block dimension; each Chambolle step is one launch over the whole cube
// (the step loop runs on the host), the dual and the denoised image live in device memory.
//
// GAP-TV iteration, 28 x 256 x 256, 5 TV steps: 0.155 ms (launch-bound); H100 80GB HBM3 (sm_80 PTX), hpipe_bench median
// of 3, 2026-11-27.
#include "schedules/cassi.h"
#include "schedules/common.h"
#include "schedules/recon.h"

namespace hpipe::sched {

using namespace Halide;

namespace {

void schedule_tv(const alg::TvChambolle &tv, Func out, const ReconCudaKnobs &k) {
  gpu_tile_image(out, k.block_w, k.block_h);
  Func dual = tv.dual;
  dual.compute_root();  // its pure definition is undefined: no kernel
  Var c = arg(dual, 2), b = arg(dual, 3), cb("cb");
  // The pixels of an image are one fused loop of threads (Halide cannot prove the steps' RVars
  // reorderable, so x and y keep their order).
  const auto pixels_in_threads = [&](Stage update, RVar x, RVar y, std::vector<VarOrRVar> outer) {
    RVar xy("xy"), xyo("xyo"), xyi("xyi");
    std::vector<VarOrRVar> order{xy, c, b};
    order.insert(order.end(), outer.begin(), outer.end());
    return update.fuse(x, y, xy)
        .reorder(order)
        .fuse(c, b, cb)
        .split(xy, xyo, xyi, k.block_w * k.block_h, TailStrategy::GuardWithIf)
        .gpu_threads(xyi)
        .gpu_blocks(xyo, cb);
  };
  // The frame's pixels are distinct (Halide cannot prove it of their computed coordinates); a launch
  // per slot, the slot loop on the host.
  RVar frame_o("frame_o"), frame_i("frame_i");
  dual.update(0)
      .allow_race_conditions()
      .reorder(tv.frame.x, c, b, tv.frame.y, tv.frame.z)
      .fuse(c, b, cb)
      .split(tv.frame.x, frame_o, frame_i, k.block_w * k.block_h, TailStrategy::GuardWithIf)
      .gpu_threads(frame_i)
      .gpu_blocks(frame_o, cb, tv.frame.y);
  // Step 0's rows are a window's (an offset of the RVar, which Halide cannot prove distinct).
  pixels_in_threads(dual.update(1).allow_race_conditions(), tv.first_step.x, tv.first_step.y, {tv.first_step.z});
  // Step k reads slot k % 2 and writes the other, so the pixels of one step are independent; the
  // step loop runs on the host, one launch per step.
  pixels_in_threads(dual.update(2).allow_race_conditions(), tv.steps.x, tv.steps.y, {tv.steps.z});
}

void schedule_root(Func f, const ReconCudaKnobs &k) {
  f.compute_root();
  gpu_tile_image(f, k.block_w, k.block_h);
}

void schedule_forward(alg::CassiForward forward, const Target &t, const ReconCudaKnobs &k) {
  schedule_cuda(forward, t, CassiCudaKnobs{k.block_w, k.block_h});
  forward.y.compute_root();
}

void schedule_tv(const alg::TvVectorial &op, Func out, const ReconCudaKnobs &k) {
  _halide_user_assert(op.form == alg::TvVectorialForm::steps)
      << "the CUDA schedule of tv_vectorial is for its steps form";
  gpu_tile_image(out, k.block_w, k.block_h);
  Func state = op.state;
  state.compute_root();
  // A launch per step (the step loop on the host); a thread per pixel runs both phases over the
  // bands, so its norm is its own (see generators/recon.h).
  // 28 x 256 x 256, 5 iterations: 0.134 ms, 1.13x the per-band TV (a block per 32-row strip of the
  // sweep: 3.73 ms); H100 80GB HBM3 (sm_80 PTX), hpipe_bench median of 3, 2026-11-27.
  const RVar band = op.sweep[0], phase = op.sweep[1], x = op.sweep[2], y = op.sweep[3], step = op.sweep[4];
  RVar xy("xy"), xyo("xyo"), xyi("xyi");
  Var b = arg(state, 3);
  state.update()
      .allow_race_conditions()
      .fuse(x, y, xy)
      .split(xy, xyo, xyi, k.block_w * k.block_h, TailStrategy::GuardWithIf)
      .reorder(band, phase, xyi, xyo, b, step)
      .gpu_threads(xyi)
      .gpu_blocks(xyo, b)
      .unroll(phase);
}

// An iteration of GAP-TV or ADMM-TV, per band or vectorial: the data step a cube in device memory,
// then the TV's steps.
template <class Tv>
void schedule_iteration(const alg::GapTvIterationOf<Tv> &op, const Target &t, const ReconCudaKnobs &k) {
  schedule_forward(op.forward, t, k);
  gpu_tile_image(op.y1, k.block_w, k.block_h);
  schedule_root(op.normalized, k);
  schedule_root(op.tv.image, k);
  schedule_tv(op.tv, op.tv.out, k);
}
template <class Tv>
void schedule_iteration(const alg::AdmmTvIterationOf<Tv> &op, const Target &t, const ReconCudaKnobs &k) {
  schedule_forward(op.forward, t, k);
  schedule_root(op.normalized, k);
  schedule_root(op.tv.image, k);
  schedule_tv(op.tv, op.out, k);
}

}  // namespace

void schedule_cuda(alg::TvChambolle op, const Target &, const ReconCudaKnobs &k) {
  schedule_tv(op, op.out, k);  // the image is the input itself
}

void schedule_cuda(alg::TvVectorial op, const Target &, const ReconCudaKnobs &k) {
  schedule_tv(op, op.out, k);  // the image is the input itself
}

void schedule_cuda(alg::GapTvIteration op, const Target &t, const ReconCudaKnobs &k) { schedule_iteration(op, t, k); }
void schedule_cuda(alg::GapTvVectorialIteration op, const Target &t, const ReconCudaKnobs &k) {
  schedule_iteration(op, t, k);
}
void schedule_cuda(alg::AdmmTvIteration op, const Target &t, const ReconCudaKnobs &k) { schedule_iteration(op, t, k); }
void schedule_cuda(alg::AdmmTvVectorialIteration op, const Target &t, const ReconCudaKnobs &k) {
  schedule_iteration(op, t, k);
}

}  // namespace hpipe::sched
