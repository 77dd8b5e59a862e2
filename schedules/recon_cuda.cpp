// CUDA schedules of the reconstruction family: every stage is a grid over (w, h) with the other
// dimensions in the third block dimension; each Chambolle step is one launch over the whole cube
// (the step loop runs on the host), the dual and the denoised image live in device memory.
//
// GAP-TV iteration, 28 x 256 x 256, 5 TV steps: 0.155 ms (launch-bound); H100 80GB HBM3 (sm_80 PTX), hpipe_bench median
// of 3, 2026-11-25.
#include "schedules/cassi.h"
#include "schedules/common.h"
#include "schedules/recon.h"

namespace hpipe::sched {

using namespace Halide;

namespace {

void schedule_tv(const alg::TvChambolle &tv, Func out, const ReconCudaKnobs &k) {
  gpu_tile_image(out, k.block_w, k.block_h);
  Func dual = tv.dual;
  dual.compute_root();
  gpu_tile_image(dual, k.block_w, k.block_h);
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
  pixels_in_threads(dual.update(0), tv.first_step.x, tv.first_step.y, {tv.first_step.z});
  // Step k reads slot k % 2 and writes the other, so the pixels of one step are independent; the
  // step loop runs on the host, one launch per step.
  pixels_in_threads(dual.update(1).allow_race_conditions(), tv.steps.x, tv.steps.y, {tv.steps.z});
}

void schedule_root(Func f, const ReconCudaKnobs &k) {
  f.compute_root();
  gpu_tile_image(f, k.block_w, k.block_h);
}

void schedule_forward(alg::CassiForward forward, const Target &t, const ReconCudaKnobs &k) {
  schedule_cuda(forward, t, CassiCudaKnobs{k.block_w, k.block_h});
  forward.y.compute_root();
}

}  // namespace

void schedule_cuda(alg::TvChambolle op, const Target &, const ReconCudaKnobs &k) {
  schedule_tv(op, op.out, k);  // the image is the input itself
}

void schedule_cuda(alg::TvVectorial op, const Target &, const ReconCudaKnobs &k) {
  // A block per strip of a batch item, all its threads along a row (the sweep has no other
  // parallel dimension: a row's phases are separated by barriers); the sweep's state in global
  // memory (a strip's rings and last dual are too large for shared memory).
  const int threads = k.block_w * k.block_h;
  Func out = op.out;
  Var w = arg(out, 0), h = arg(out, 1), c = arg(out, 2), b = arg(out, 3);
  Var ho("ho"), hi("hi"), wo("wo"), wi("wi"), task("task");
  out.split(h, ho, hi, op.strip_rows, TailStrategy::GuardWithIf)
      .split(w, wo, wi, threads, TailStrategy::GuardWithIf)
      .reorder(wi, wo, c, hi, ho, b)
      .fuse(ho, b, task)
      .gpu_blocks(task)
      .gpu_threads(wi);
  op.state.compute_at(out, task).store_in(MemoryType::Heap);
  RVar xo("xo"), xi("xi");
  op.state.update()
      .allow_race_conditions()
      .split(op.sweep[0], xo, xi, threads, TailStrategy::GuardWithIf)
      .gpu_threads(xi)
      .unroll(op.sweep[2]);
}

void schedule_cuda(alg::GapTvIteration op, const Target &t, const ReconCudaKnobs &k) {
  schedule_forward(op.forward, t, k);
  gpu_tile_image(op.y1, k.block_w, k.block_h);
  schedule_root(op.normalized, k);
  schedule_root(op.tv.image, k);
  schedule_tv(op.tv, op.tv.out, k);
}

void schedule_cuda(alg::AdmmTvIteration op, const Target &t, const ReconCudaKnobs &k) {
  schedule_forward(op.forward, t, k);
  schedule_root(op.normalized, k);
  schedule_root(op.tv.image, k);
  schedule_tv(op.tv, op.out, k);
}

}  // namespace hpipe::sched
