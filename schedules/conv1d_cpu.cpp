// CPU-vector schedule of the batched 1-D convolution.
//
// Rows in parallel tasks; each row is staged zero-padded (dense vector copies, the row's end a
// masked vector), then every vector of outputs accumulates its taps in a register, the taps
// unrolled for kernels of 2..9 taps. Measured on a 2-core Xeon (Cascade Lake, AVX-512 target,
// KVM, shared with other builds), default knobs: 100000 rows of 9 with 7 taps 1.9-2.0 ms on one
// thread, 1.9-7.2 ms on two (34-56% of BM_stream_copy); one call of 5 rows 1.1-2.3 us; 1000 rows
// of 1000 with 31 taps (generic path) 2.7 ms on one thread. Details: README "Performance".
#include "schedules/common.h"
#include "schedules/conv1d.h"

namespace hpipe::sched {

using namespace Halide;

void schedule_cpu(alg::Conv1d op, const Target &t, const Conv1dCpuKnobs &k) {
  const int lanes = vector_lanes(t, value_type(op.out), k.vector_factor);
  Var x = arg(op.out, 0), i = arg(op.out, 1);
  Var io("io"), ii("ii"), is("is"), xo("xo"), xi("xi");
  op.out.split(i, io, ii, k.rows_per_task, TailStrategy::GuardWithIf)
      .split(ii, is, ii, k.rows_per_stage, TailStrategy::GuardWithIf)
      .split(x, xo, xi, lanes, TailStrategy::GuardWithIf)
      .vectorize(xi);
  // A call that is one task runs in the calling thread, without a thread-pool round trip.
  op.out.specialize(op.out.output_buffer().dim(1).extent() <= k.rows_per_task);
  // Common tap counts get their own loop nest, so the choice of unrolled taps below is made once
  // per call rather than once per vector.
  for (int n = kConv1dUnrolledTapsMin; n <= kConv1dUnrolledTapsMax; n++)
    op.out.specialize(op.taps == n).parallel(io);
  op.out.parallel(io);

  // One vector of outputs in a register while the taps stream past. The staged rows are padded,
  // so the vector may round up past the row's end; only the store to `out` is masked.
  Var cx = arg(op.conv, 0);
  op.conv.compute_at(op.out, xo).vectorize(cx, lanes, TailStrategy::RoundUp);
  op.conv.update().reorder(cx, op.kernel.x).vectorize(cx, lanes, TailStrategy::RoundUp);
  for (int n = kConv1dUnrolledTapsMin; n <= kConv1dUnrolledTapsMax; n++)
    op.conv.update().specialize(op.taps == n).unroll(op.kernel.x);

  // Padded rows: zeros, then the rows copied in, a stage of rows_per_stage rows at a time, so the
  // convolution's loads never wait on the stores that just wrote their row (store forwarding).
  // Allocated once per task, folded to one stage.
  Var px = arg(op.padded, 0), pi = arg(op.padded, 1);
  op.padded.store_at(op.out, io)
      .compute_at(op.out, is)
      .vectorize(px, lanes, TailStrategy::RoundUp);
  // A fold of one row fails Halide 14's run-time check ("folded storage dimension ... accessed out
  // of order", every rows_per_stage:1 variant, found by hpipe-tune): one-row stages stay unfolded.
  if (k.rows_per_stage > 1) op.padded.fold_storage(pi, k.rows_per_stage);
  op.padded.update().vectorize(op.signal.x, lanes, TailStrategy::GuardWithIf);
}

}  // namespace hpipe::sched
