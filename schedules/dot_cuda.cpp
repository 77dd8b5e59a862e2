// CUDA schedule of the batched dot product: one block of kDotLanes threads per chunk of 2048
// products (thread u reads element u of every block, so a warp's loads are coalesced), the lanes
// in shared memory, one thread per chunk for the double-precision combination, then one thread
// per row over its chunks. The (chunk, row) blocks are fused into the grid's x dimension (its y
// dimension stops at 65535 rows).
//
// 4096 x 4096 float32: 58.6 us (77% of BM_cuda_copy); H100 80GB HBM3 (sm_80 PTX), hpipe_bench median of 3, 2026-11-27.
#include "schedules/common.h"
#include "schedules/dot.h"

namespace hpipe::sched {

using namespace Halide;

void schedule_cuda(alg::BatchedDot op, const Target &, const DotCudaKnobs &k) {
  Var c = arg(op.chunk_sum, 0), i = arg(op.chunk_sum, 1);
  Var one("one"), chunk_row("chunk_row");
  op.chunk_sum.compute_root()
      .split(c, c, one, 1)
      .reorder(one, c, i)
      .fuse(c, i, chunk_row)
      .gpu_threads(one)
      .gpu_blocks(chunk_row);

  Var u = arg(op.lanes, 0);
  op.lanes.compute_at(op.chunk_sum, chunk_row).gpu_threads(u);
  // Each thread walks the blocks of the chunk for its own lane.
  op.lanes.update().reorder(op.blocks.x, u).gpu_threads(u);
  // The combination in double runs in the block's one thread of chunk_sum (both stages of each).
  op.lane_total.compute_at(op.chunk_sum, one);
  op.tail_total.compute_at(op.chunk_sum, one);

  Var io("io"), ii("ii");
  op.out.compute_root().gpu_tile(arg(op.out, 0), io, ii, k.rows_per_block, TailStrategy::GuardWithIf);
  op.sum.compute_at(op.out, ii);  // both stages inside the thread
}

// Column-major operands: one thread per (row, group of 1024 k), neighbouring threads on
// neighbouring rows (coalesced), the chunk sums in registers; then one thread per row.
void schedule_cuda(alg::BatchedDotColumns op, const Target &, const DotCudaKnobs &k) {
  Var i = arg(op.group, 0), g = arg(op.group, 1);
  Var io("io"), ii("ii");
  op.group.compute_root().gpu_tile(i, io, ii, k.rows_per_block, TailStrategy::GuardWithIf).gpu_blocks(g);
  op.group.update().gpu_tile(i, io, ii, k.rows_per_block, TailStrategy::GuardWithIf).gpu_blocks(g);
  op.chunk.compute_at(op.group, op.chunks.x);  // both stages inside the thread

  Var oo("oo"), oi("oi");
  op.out.gpu_tile(arg(op.out, 0), oo, oi, k.rows_per_block, TailStrategy::GuardWithIf);
  op.sum.compute_at(op.out, oi);
}

}  // namespace hpipe::sched
