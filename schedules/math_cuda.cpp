// CUDA schedules of the math family.
//
// exp / log / erf float32, 10^8: 0.277 / 0.276 / 0.278 ms (97 / 98 / 97% of BM_cuda_copy); logsumexp
// float32 10000 x 10000 axis 0: 0.333 ms (40%); H100 80GB HBM3 (sm_80 PTX), hpipe_bench median of 3, 2026-11-27.
#include "schedules/common.h"
#include "schedules/math.h"

namespace hpipe::sched {

using namespace Halide;

// Elementwise: each thread computes `elements_per_thread` elements a block's width apart, so that
// each access of a warp is one contiguous run and a thread has that many loads in flight. (One
// element per thread reached 74% of a device copy on an H100 for float32, 4 elements 97%; a
// thread's elements side by side as one vector access was 100x slower.) The fast parts of each
// element are computed just before it, in registers.
void schedule_cuda(alg::Elementwise op, const Target &, const MathElementwiseCudaKnobs &k) {
  _halide_user_assert(op.group_lanes == 0) << "the CUDA schedule of the elementwise ops is for their ungrouped form";
  Var i = arg(op.y, 0), block("block"), thread("thread"), element("element"), rest("rest");
  op.y.split(i, block, rest, k.block * k.elements_per_thread, TailStrategy::GuardWithIf)
      .split(rest, element, thread, k.block)
      .reorder(element, thread, block)
      .gpu_blocks(block)
      .gpu_threads(thread)
      .unroll(element);
  op.fast_parts.compute_at(op.y, element);
}

// logsumexp in two kernels. The first computes every chunk's (shift, sum), a thread per (column,
// chunk), its max and sum stages inside the thread (the sum re-reads the chunk's rows, 256 bytes of
// the column, from cache). With that many threads even 10000 columns fill the GPU. Neighbouring
// threads take neighbouring columns, so that a warp reads a contiguous run of each row; when there
// are fewer columns than a warp (a reduction along contiguous rows: one column), neighbouring
// chunks instead. The second kernel folds each column's chunks, a thread per (column, outer slice),
// the fold unrolled so that the loads and exps of several chunks overlap (8 chunks: 15% faster than
// none on 10000 x 2048; unrolling a chunk's rows instead made it slower). Grid dimensions that can
// be large are fused into x, which has no 65535 limit. (Fusing the thread dimension too makes
// Halide size the chunk's per-thread stages for a whole row.)
void schedule_cuda(alg::LogSumExp op, const Target &, const MathLogSumExpCudaKnobs &k) {
  Var i = arg(op.chunk, 0), c = arg(op.chunk, 1), o = arg(op.chunk, 2);
  Var block("block"), thread("thread"), rest("rest");
  Expr columns = op.out.output_buffer().dim(0).extent();
  op.chunk.compute_root();
  op.chunk.specialize(columns >= 32)
      .split(i, block, thread, k.block, TailStrategy::GuardWithIf)
      .fuse(c, o, rest)
      .reorder(thread, rest, block)
      .gpu_blocks(rest, block)
      .gpu_threads(thread);
  op.chunk.split(c, block, thread, k.block, TailStrategy::GuardWithIf)
      .fuse(block, o, rest)
      .reorder(thread, i, rest)
      .fuse(i, rest, rest)
      .gpu_blocks(rest)
      .gpu_threads(thread);
  op.chunk_max.compute_at(op.chunk, thread);
  op.chunk_sum.compute_at(op.chunk, thread);

  Var oi = arg(op.out, 0), oo = arg(op.out, 1), column_slice("column_slice");
  op.out.fuse(oi, oo, column_slice).gpu_tile(column_slice, block, thread, k.block, TailStrategy::GuardWithIf);
  op.running.compute_at(op.out, thread).update().unroll(op.chunks.x, k.fold_unroll, TailStrategy::GuardWithIf);
}

// logsumexp along rows (the rows kernel): a thread per row, its stages in the thread. Not run by
// the runtime yet (rows on CUDA take the column kernel's path) until a GPU has measured it.
void schedule_cuda(alg::LogSumExpRows op, const Target &, const MathLogSumExpCudaKnobs &k) {
  Var r = arg(op.out, 0), block("block"), thread("thread");
  op.out.gpu_tile(r, block, thread, k.block, TailStrategy::GuardWithIf);
  for (Func f : {op.lane_max, op.row_max, op.lane_sum, op.row_sum}) f.compute_at(op.out, thread);
}

}  // namespace hpipe::sched
