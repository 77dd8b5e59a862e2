// CPU-vector schedule of the batched dot product.
//
// Parallel over chunks of 2048 products (fused with rows, so a few long rows and many short rows
// both fill the cores); within a chunk the kDotLanes partial sums are one register-resident vector
// accumulator.
//
// 4096 x 4096 float32: 2.47 ms (127% of BM_stream_read), 500 x 500 11.4 us; 2-core AMD EPYC (Zen 5,
// AVX-512, VM), make bench median of 5, 2026-11-27 (sixth session).
#include "schedules/common.h"
#include "schedules/dot.h"

namespace hpipe::sched {

using namespace Halide;

void schedule_cpu(alg::BatchedDot op, const Target &, const DotCpuKnobs &k) {
  Var c = arg(op.chunk_sum, 0), i = arg(op.chunk_sum, 1);
  Var task("task"), to("to"), ti("ti");
  op.chunk_sum.compute_root()
      .fuse(c, i, task)
      .split(task, to, ti, k.chunks_per_task, TailStrategy::GuardWithIf)
      .parallel(to);

  // The lanes of one chunk live in registers while its blocks stream past.
  Var u = arg(op.lanes, 0);
  op.lanes.compute_at(op.chunk_sum, ti).vectorize(u);
  op.lanes.update().reorder(u, op.blocks.x).vectorize(u);
  // Per chunk: a horizontal sum of kDotLanes values and at most kDotLanes - 1 leftover products.
  // Their updates stay serial on purpose: scalar loops of at most kDotLanes iterations.
  op.lane_total.compute_at(op.chunk_sum, ti);
  op.tail_total.compute_at(op.chunk_sum, ti);

  // One value per row: the chunks of the row (serial, a few per row), then the cast.
  op.sum.compute_at(op.out, arg(op.out, 0));
}

// Column-major operands: parallel over groups of 1024 consecutive k, so each task streams one
// contiguous block of memory; within it, rows of N elements are added into N running chunk sums
// (vectorized along i; every i vector is masked at the end, as N may be smaller than a vector).
void schedule_cpu(alg::BatchedDotColumns op, const Target &t, const DotCpuKnobs &) {
  const int lanes = vector_lanes(t, value_type(op.out), 1);
  Var i = arg(op.group, 0), g = arg(op.group, 1);
  op.group.compute_root().parallel(g).vectorize(i, lanes, TailStrategy::GuardWithIf);
  op.group.update().reorder(i, op.chunks.x, g).parallel(g).vectorize(i, lanes, TailStrategy::GuardWithIf);

  Var ci = arg(op.chunk, 0);
  op.chunk.store_at(op.group, g).compute_at(op.group, op.chunks.x).vectorize(ci, lanes, TailStrategy::GuardWithIf);
  op.chunk.update().reorder(ci, op.products.x).vectorize(ci, lanes, TailStrategy::GuardWithIf);

  Var oo("oo"), oi("oi"), si = arg(op.sum, 0);
  op.out.split(arg(op.out, 0), oo, oi, lanes, TailStrategy::GuardWithIf).vectorize(oi);
  op.sum.compute_at(op.out, oo).vectorize(si, lanes, TailStrategy::GuardWithIf);
  op.sum.update().vectorize(si, lanes, TailStrategy::GuardWithIf);
}

}  // namespace hpipe::sched
