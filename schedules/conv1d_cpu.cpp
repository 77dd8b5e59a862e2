// CPU-vector schedule of the batched 1-D convolution.
//
// Rows in parallel tasks; each row is staged zero-padded (dense vector copies, the row's end a
// masked vector; short rows element by element), then every vector of outputs accumulates its
// taps in a register, the taps unrolled for kernels of 2..9 taps. Batches of short rows (outputs
// <= short_row_length, at least one task of them) get their own nest with larger tasks and stages.
//
// 10^5 rows of 9, 7 taps: 354 us (84% of BM_stream_copy); 5 rows of 5: 0.42 us; 2-core AMD EPYC
// (Zen 5, AVX-512, VM), make bench median of 5, 2026-11-27 (sixth session). 10^5 rows of 9, 7 taps:
// 710-782 us (62-69% of BM_stream_copy); 2-core AMD EPYC (Zen 3, AVX2, VM), hpipe_bench medians of
// 3, 2026-11-28 (fourteenth session).
#include <algorithm>

#include "schedules/common.h"
#include "schedules/conv1d.h"

namespace hpipe::sched {

using namespace Halide;

void schedule_cpu(alg::Conv1d op, const Target &t, const Conv1dCpuKnobs &k) {
  _halide_user_assert(op.form.kind == alg::Conv1dForm::staged) << "the CPU schedule of conv1d is for its staged form";
  const int lanes = vector_lanes(t, value_type(op.out), k.vector_factor);
  Var x = arg(op.out, 0), i = arg(op.out, 1);
  Var io("io"), ii("ii"), is("is"), xo("xo"), xi("xi");
  // One loop nest per row class, with the same loop names (the stages below are placed by name):
  // tasks of `rows` rows, stages of `stage` rows, one vector of outputs at a time.
  auto rows_loop = [&](Stage s, int rows, int stage) {
    s.split(i, io, ii, rows, TailStrategy::GuardWithIf).split(ii, is, ii, stage, TailStrategy::GuardWithIf);
    // Rows of at least a vector end with a whole vector shifted back over the one before (it
    // recomputes a few outputs): a masked store is dozens of micro-ops on AMD CPUs.
    const Stage whole_vectors = s.specialize(op.out.output_buffer().dim(0).extent() >= lanes);
    for (auto [nest, tail] :
         {std::pair{whole_vectors, TailStrategy::ShiftInwards}, std::pair{s, TailStrategy::GuardWithIf}}) {
      nest.split(x, xo, xi, lanes, tail).vectorize(xi);
      // A call that is one task runs in the calling thread, without a thread-pool round trip.
      nest.specialize(op.out.output_buffer().dim(1).extent() <= rows);
      // Common tap counts get their own loop nest, so the choice of unrolled taps below is made
      // once per call rather than once per vector.
      for (int n = kConv1dUnrolledTapsMin; n <= kConv1dUnrolledTapsMax; n++) nest.specialize(op.taps == n).parallel(io);
      nest.parallel(io);
    }
  };
  if (k.short_row_length > 0) {
    // Short rows take a few ns each: tasks of 64 of them cost less than the thread pool's hand-off
    // (100000 rows of 15 outputs: 1.6-1.9 ms in tasks of 64 rows, 1.0-1.1 ms in tasks of 1024).
    // Calls of fewer rows than one such task keep the general nest (measured faster there).
    const auto &shape = op.out.output_buffer();
    rows_loop(op.out.specialize(shape.dim(0).extent() <= k.short_row_length &&
                                shape.dim(1).extent() >= k.short_rows_per_task),
              k.short_rows_per_task, k.short_rows_per_stage);
  }
  rows_loop(op.out, k.rows_per_task, k.rows_per_stage);

  // One vector of outputs in a register while the taps stream past. The staged rows are padded,
  // so the vector may round up past the row's end; only the store to `out` is masked.
  Var cx = arg(op.conv, 0);
  op.conv.compute_at(op.out, xo).vectorize(cx, lanes, TailStrategy::RoundUp);
  op.conv.update().reorder(cx, op.kernel.x).vectorize(cx, lanes, TailStrategy::RoundUp);
  for (int n = kConv1dUnrolledTapsMin; n <= kConv1dUnrolledTapsMax; n++)
    op.conv.update().specialize(op.taps == n).unroll(op.kernel.x);

  // Padded rows: zeros, then the rows copied in, a stage of rows_per_stage rows at a time, so the
  // convolution's loads never wait on the stores that just wrote their row (store forwarding).
  // Allocated once per task, folded to one stage (the larger of the two row classes' stages).
  Var px = arg(op.padded, 0), pi = arg(op.padded, 1), pxo("pxo"), pxi("pxi");
  op.padded.store_at(op.out, io).compute_at(op.out, is);
  // Rows of up to 4 vectors are zeroed by 4 vector stores: LLVM made the zeroing loop a call to
  // memset, a tenth of 10^5 rows of 9's time (Zen 3).
  op.padded.specialize(op.out.output_buffer().dim(0).extent() + op.taps - 1 <= 4 * lanes)
      .split(px, pxo, pxi, 4 * lanes, TailStrategy::RoundUp)
      .vectorize(pxi, lanes)
      .unroll(pxi);
  op.padded.vectorize(px, lanes, TailStrategy::RoundUp);
  // A fold of one row fails Halide 14's run-time check ("folded storage dimension ... accessed out
  // of order", every rows_per_stage:1 variant, found by hpipe-tune): one-row stages stay unfolded.
  const int fold = k.short_row_length > 0 ? std::max(k.rows_per_stage, k.short_rows_per_stage) : k.rows_per_stage;
  const bool one_row_stages = k.rows_per_stage == 1 || (k.short_row_length > 0 && k.short_rows_per_stage == 1);
  if (!one_row_stages) op.padded.fold_storage(pi, fold);
  // Rows copied in whole vectors (alg::Conv1dForm): the vectors that overlap write equal values.
  op.padded.update(0).allow_race_conditions().vectorize(op.copy_vectors.x);
  op.padded.update(1).unscheduled();  // rows shorter than a vector, element by element
}

}  // namespace hpipe::sched
