// CPU-vector schedules of the math family.
//
// exp / log / erf float32, 10^8: 17.0 / 17.0 / 15.9 ms (94 / 94 / 101% of BM_stream_nt_copy, their
// streaming libraries' limit), exp / erf float64 40.1 / 41.2 ms (80 / 78%), erf float64 of a normal
// CDF's arguments 112 ms; logsumexp 10000 x 10000 axis 0 float32 14.9 ms (62% of BM_stream_read),
// float64 44.2 ms (42%), float32 along rows 18.1 ms (52%); 2-core AMD EPYC (Zen 5, AVX-512, VM),
// make bench median of 5, 2026-11-28 (twelfth session). erf float32 49.6 ms (65% of BM_stream_copy);
// 2-core AMD EPYC (Zen 3, AVX2, VM), make bench median of 5, 2026-11-28 (thirteenth session).
// logsumexp axis 0 float32 41.5-45.6 ms (45% of BM_stream_read), float64 129-145 ms; the same
// Zen 3 VM, hpipe_bench medians of 3, 2026-11-28 (fourteenth session).
#include <algorithm>

#include "schedules/common.h"
#include "schedules/math.h"

namespace hpipe::sched {

using namespace Halide;

// Elementwise: vectors, grouped into tasks of at most `elements_per_task` elements, but as many as
// kTasksWanted tasks where tasks of kLeastTaskElements or more allow it (arrays of up to 2^20
// elements keep the tasks they had before tasks grew). Each task starts streams the hardware
// prefetchers must find again: tasks of 2^14 elements made exp / log / erf 11-14% slower than tasks
// of 2^18 at 2^24 float32 (JIT, AVX-512 and AVX2), the AVX2 code 10-20% slower at 10^8 (Zen 5,
// docs/performance-notes.md). (Splitting into tasks first and guarding there made the last task run
// all its vectors, masked, past the end.)
// The fast parts are computed per vector, just before the vector that uses them, and stay in
// registers: the vectors are whole, the last one shifted back to end at the last element (it
// recomputes a few elements; outputs never overlap inputs). A guarded vector would store them
// to the stack, masked, and those stores queue behind the output's in the store buffer: 20%
// slower at 10^8 elements. Fewer elements than a vector: one guarded vector.
//
// Grouped (erf float64): a vector is one group, whatever `vector_factor` (2 or 4 groups a vector
// spilled registers in the finish: at 10^8 elements in [0, 1) 41 / 60 ms against 36). Vectors start
// at multiples of the group, so that each reads its group's parts as one vector (the last vector is
// guarded). A chunk of kChunkVectors groups at a time: their flags, their cheap parts and, under
// one branch per group, their full parts; then the chunk's vectors, from L1. Chunks of 32 were
// faster than 8, 16, 64 or 128 (38-57 ms against 35 in [0, 1), 116 against 118-134 in [-4, 4),
// Zen 5, 2026-11-28; docs/performance-notes.md).
constexpr int kTasksWanted = 64, kLeastTaskElements = 1 << 14;
constexpr int kChunkVectors = 32;

void schedule_cpu(alg::Elementwise op, const Target &t, const MathElementwiseCpuKnobs &k) {
  const bool grouped = op.group_lanes != 0;
  const int lanes = grouped ? op.group_lanes : vector_lanes(t, value_type(op.y), k.vector_factor);
  Var i = arg(op.y, 0), v("v"), lane("lane"), task("task"), chunk("chunk");
  Expr n = op.y.output_buffer().dim(0).extent();
  const int most = std::max(1, k.elements_per_task / lanes);
  const int least = std::max(1, std::min(k.elements_per_task, kLeastTaskElements) / lanes);
  const Expr vectors_per_task = clamp(n / (lanes * kTasksWanted), least, most);
  // Whole vectors, the last one shifted back; grouped, guarded, and chunks of vectors.
  Stage vectors = op.y.specialize(n >= lanes)
                      .split(i, v, lane, lanes, grouped ? TailStrategy::GuardWithIf : TailStrategy::ShiftInwards)
                      .split(v, task, v, vectors_per_task, TailStrategy::GuardWithIf);
  Stage one_vector = op.y.split(i, v, lane, lanes, TailStrategy::GuardWithIf);
  if (grouped) {
    vectors.split(v, chunk, v, kChunkVectors, TailStrategy::GuardWithIf);
    one_vector.split(v, chunk, v, kChunkVectors, TailStrategy::GuardWithIf);
  }
  vectors.parallel(task).vectorize(lane);
  one_vector.vectorize(lane);
  if (!grouped) {
    // A vector's storage, also for an input shorter than one (Halide would size it by the extent,
    // on the heap: a malloc in every tiny call).
    op.fast_parts.compute_at(op.y, v)
        .bound_storage(arg(op.fast_parts, 0), lanes)
        .vectorize(arg(op.fast_parts, 0), lanes, TailStrategy::GuardWithIf);
    return;
  }
  // Storage bounded by a chunk's groups (Halide would size it per chunk, on the heap).
  op.needs_full.compute_at(op.y, chunk).bound_storage(arg(op.needs_full, 0), kChunkVectors);
  op.needs_full.update().atomic().vectorize(op.flag_lanes);
  op.fast_parts.compute_at(op.y, chunk)
      .bound_storage(arg(op.fast_parts, 1), kChunkVectors)
      .vectorize(arg(op.fast_parts, 0));
  op.fast_parts.update().vectorize(op.full_lanes);
}

// logsumexp: a task is a block of columns (i) of one outer slice (o), at most `columns_per_task`
// wide; the blocks of a slice are as equal as whole vectors allow (an odd small last block would
// leave a thread idle). For each chunk of rows and each vector of columns, the chunk's maximum
// and then its sum of exponentials are computed in registers (the chunk's rows are read once from
// memory, then again from L1), then folded into the task's running (shift, sum). A chunk's rows are
// read as concurrent streams across the block, which the prefetchers follow; reading a block row by
// row reached half the memory bandwidth (docs/performance-notes.md).
//
// Row vectors (the partial kernel): a task is one row, whose chunks fold one after another, so a
// task takes kRowsPerTask rows and folds them side by side, their chains overlapping, where there
// are rows enough for 32 such tasks (2 and 8 rows measured slower). Each task prefetches its rows'
// next chunk, a line per row of 16 lanes: one stream per row stalls wherever a chunk begins a page
// the hardware prefetchers have not reached. Column blocks are left to the prefetchers: prefetching
// them was slower. Figures: docs/performance-notes.md (Zen 5, 2026-11-27).
constexpr int kRowsPerTask = 4;

void schedule_cpu(alg::LogSumExp op, const Target &t, const MathLogSumExpCpuKnobs &k) {
  // Vectors of the input's type (the partial results may be wider).
  const int lanes = vector_lanes(t, op.chunk_max.output_types()[0], k.vector_factor);
  Var i = arg(op.out, 0), o = arg(op.out, 1), io("io"), ii("ii"), task("task");
  Expr columns = op.out.output_buffer().dim(0).extent();
  Expr vectors = (columns + lanes - 1) / lanes;
  Expr blocks = (vectors * lanes + k.columns_per_task - 1) / k.columns_per_task;
  Expr task_width = (vectors + blocks - 1) / blocks * lanes;
  Var oo("oo"), oi("oi");
  auto tasks = [&](Stage s, int rows_per_task) {
    s.split(i, io, ii, task_width, TailStrategy::GuardWithIf)
        .split(o, oo, oi, rows_per_task, TailStrategy::GuardWithIf)
        .reorder(ii, oi, io, oo)
        .fuse(io, oo, task)
        .parallel(task)
        .vectorize(ii, lanes, TailStrategy::GuardWithIf);
  };
  const bool row_vectors = op.reads == alg::LogSumExpReads::row_vectors;
  if (row_vectors) tasks(op.out.specialize(op.out.output_buffer().dim(1).extent() >= 32 * kRowsPerTask), kRowsPerTask);
  tasks(op.out, 1);

  RVar chunk = op.chunks.x;
  Var ri = arg(op.running, 0), ro = arg(op.running, 1), vector("vector"), lane("lane");
  // Fixed-size stack storage (a task's width at most): otherwise every task allocated it on the heap.
  op.running.compute_at(op.out, task)
      .bound_storage(ri, (k.columns_per_task + lanes - 1) / lanes * lanes)
      .bound_storage(ro, row_vectors ? kRowsPerTask : 1)
      .store_in(MemoryType::Stack)
      .vectorize(ri, lanes, TailStrategy::GuardWithIf);
  // The fold specialized as its chunks' rows are (a short chunk's extent in the fold's one loop
  // cost Halide's partition of it: the clamped last chunk's code ran for every chunk).
  std::vector<Stage> folds{op.running.update()};
  if (op.whole_chunks.defined()) folds.insert(folds.begin(), op.running.update().specialize(op.whole_chunks));
  for (Stage fold : folds) {
    fold.split(ri, vector, lane, lanes, TailStrategy::GuardWithIf).reorder(lane, vector, ro, chunk).vectorize(lane);
    if (row_vectors && op.input.defined()) fold.prefetch(op.input, chunk, chunk, 1, PrefetchBoundStrategy::NonFaulting);
  }
  // Whole chunks' rows unrolled (a loop or partial unrolling measured slower); a short chunk's
  // rows in a loop.
  for (auto [f, step] : {std::pair{op.chunk_max, op.chunk_rows}, std::pair{op.chunk_sum, op.chunk_terms}}) {
    Var fi = arg(f, 0);
    f.compute_at(op.running, vector).vectorize(fi, lanes, TailStrategy::GuardWithIf);
    Stage whole = op.whole_chunks.defined() ? f.update().specialize(op.whole_chunks) : f.update();
    for (Stage s : {whole, f.update()}) s.reorder(fi, step.x).vectorize(fi, lanes, TailStrategy::GuardWithIf);
    whole.unroll(step.x);
  }
}

// logsumexp along rows (the rows kernel): a task is a run of whole rows of about kRowTaskElements
// elements (or one longer row), taken kRowsTogether at a time: each row's maximum, sum and
// logarithm are a chain of dependent steps (a row at a time, rows of 100 ran at a third of the
// speed of the transposes), so the group's rows are reduced one after another and their results
// computed as vectors across the rows; a block's lanes are vectorized (16 floats, one AVX-512
// vector), so that the second pass reads the row from L1, and combined by vector reductions. 16
// rows together: hpipe_bench's
// BM_logsumexp_f32/125000/32/1 0.93-1.05 ms against 1.2 or 2.6 with 8 (either, by process: the
// slow one not explained) and 1.10-1.23 with 32; 4096/1000/1 0.60-0.62 ms alike (Zen 5 VM,
// 2026-11-29; with float32's rounding of x - max carried since, 125000/32/1 1.19-1.32 ms and W2
// along rows 21.2-22.1 ms, 83-87% of the lanes path's time). The knobs are the column kernel's
// (this schedule reads none of them).
constexpr int kRowTaskElements = 1 << 15, kRowsTogether = 16;

void schedule_cpu(alg::LogSumExpRows op, const Target &, const MathLogSumExpCpuKnobs &) {
  Var r = arg(op.out, 0), task("task"), rows("rows"), group("group"), row("row");
  // Whole groups where a task holds one or more, else as many rows as kRowTaskElements allows (long
  // rows: one a task at least, so that few rows still make a task each).
  Expr rows_in_elements = kRowTaskElements / op.n;
  Expr rows_per_task = select(rows_in_elements >= kRowsTogether, rows_in_elements / kRowsTogether * kRowsTogether,
                              max(1, rows_in_elements));
  op.out.split(r, task, rows, rows_per_task, TailStrategy::GuardWithIf)
      .split(rows, group, row, kRowsTogether, TailStrategy::GuardWithIf)
      .parallel(task)
      .vectorize(row);
  // Fixed-size stack storage (the last group's rows are fewer: otherwise every group allocated it on
  // the heap).
  for (Func f : {op.lane_max, op.lane_sum}) {
    Var lane = arg(f, 0);
    f.compute_at(op.out, group).bound_storage(arg(f, 1), kRowsTogether).store_in(MemoryType::Stack).vectorize(lane);
    for (int u = 0; u < f.num_update_definitions(); u++) f.update(u).vectorize(lane);
  }
  for (Func f : {op.row_max, op.row_sum}) {
    f.compute_at(op.out, group).bound_storage(arg(f, 0), kRowsTogether).store_in(MemoryType::Stack);
    f.update().atomic().vectorize(op.lanes.x);
  }
}

}  // namespace hpipe::sched
