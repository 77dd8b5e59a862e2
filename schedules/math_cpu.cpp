// CPU-vector schedules of the math family.
//
// exp / log / erf float32, 10^8: 24.4 / 27.8 / 28.3 ms (98 / 86 / 84% of BM_stream_copy); logsumexp
// float32 10000 x 10000 axis 0: 52.8 ms (22% of BM_stream_read); 2-core AMD EPYC (Zen 4, AVX-512, VM), hpipe_bench
// median of 3, 2026-11-23.
#include <algorithm>

#include "schedules/common.h"
#include "schedules/math.h"

namespace hpipe::sched {

using namespace Halide;

// Elementwise: vectors, grouped into tasks of about `elements_per_task` elements. (Splitting into
// tasks first and guarding there made the last task run all its vectors, masked, past the end.)
// The fast parts are computed per vector, just before the vector that uses them, and stay in
// registers: the vectors are whole, the last one shifted back to end at the last element (it
// recomputes a few elements; outputs never overlap inputs). A guarded vector would store them
// to the stack, masked, and those stores queue behind the output's in the store buffer: 20%
// slower at 10^8 elements. Fewer elements than a vector: one guarded vector.
void schedule_cpu(alg::Elementwise op, const Target &t, const MathElementwiseCpuKnobs &k) {
  const int lanes = vector_lanes(t, value_type(op.y), k.vector_factor);
  Var i = arg(op.y, 0), v("v"), lane("lane"), task("task");
  Expr n = op.y.output_buffer().dim(0).extent();
  op.y.specialize(n >= lanes)
      .split(i, v, lane, lanes, TailStrategy::ShiftInwards)
      .split(v, task, v, std::max(1, k.elements_per_task / lanes), TailStrategy::GuardWithIf)
      .parallel(task)
      .vectorize(lane);
  op.y.split(i, v, lane, lanes, TailStrategy::GuardWithIf).vectorize(lane);
  op.fast_parts.compute_at(op.y, v).vectorize(arg(op.fast_parts, 0), lanes, TailStrategy::GuardWithIf);
}

// logsumexp: a task is `columns_per_task` columns (i) of one outer slice (o). For each chunk of
// rows, the chunk's maximum and then its sum of exponentials are computed across the whole width
// of the task (rows read contiguously; the chunk is re-read from cache for the sum), then folded
// into the running (shift, sum) of the task's columns. Every stage is vectorized across columns.
// What bounds float32 along axis 0, and the variants measured: docs/performance-notes.md.
void schedule_cpu(alg::LogSumExp op, const Target &t, const MathLogSumExpCpuKnobs &k) {
  const int lanes = vector_lanes(t, value_type(op.out), k.vector_factor);
  Var i = arg(op.out, 0), o = arg(op.out, 1), io("io"), ii("ii"), task("task");
  // A task is at most as wide as the output, rounded up to whole vectors: a wider one would run
  // its masked remainder (every vector of the fold and of the final log, all lanes off) for each
  // narrow output, e.g. the 64 lanes of the runtime's rows path, 3x slower there.
  Expr columns = op.out.output_buffer().dim(0).extent();
  Expr task_width = min(k.columns_per_task, (columns + lanes - 1) / lanes * lanes);
  op.out.split(i, io, ii, task_width, TailStrategy::GuardWithIf)
      .reorder(ii, io, o)
      .fuse(io, o, task)
      .parallel(task)
      .vectorize(ii, lanes, TailStrategy::GuardWithIf);

  RVar chunk = op.chunks.x, row = op.chunk_rows.x;
  Var ri = arg(op.running, 0), ro = arg(op.running, 1);
  // Fixed-size stack storage (a task's width at most): otherwise every chunk allocated its buffers
  // on the heap.
  op.running.compute_at(op.out, task)
      .bound_storage(ri, k.columns_per_task)
      .store_in(MemoryType::Stack)
      .vectorize(ri, lanes, TailStrategy::GuardWithIf);
  op.running.update().reorder(ri, ro, chunk).vectorize(ri, lanes, TailStrategy::GuardWithIf);
  for (Func f : {op.chunk_max, op.chunk_sum}) {
    Var fi = arg(f, 0);
    f.compute_at(op.running, chunk)
        .bound_storage(fi, k.columns_per_task)
        .store_in(MemoryType::Stack)
        .vectorize(fi, lanes, TailStrategy::GuardWithIf);
    f.update().reorder(fi, row).vectorize(fi, lanes, TailStrategy::GuardWithIf);
  }
}

}  // namespace hpipe::sched
