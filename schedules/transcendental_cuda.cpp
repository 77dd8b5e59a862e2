// CUDA schedules of the transcendental family: one thread per output element. Not yet timed on a
// GPU (no GPU was lent when they were written).
#include "schedules/common.h"
#include "schedules/transcendental.h"

namespace hpipe::sched {

using namespace Halide;

void schedule_cuda(alg::Elementwise op, const Target &, const MathCudaKnobs &k) {
  Var i = arg(op.y, 0), block("block"), thread("thread");
  op.y.gpu_tile(i, block, thread, k.block, TailStrategy::GuardWithIf);
  op.fast_parts.compute_at(op.y, thread);
}

// logsumexp: a thread per column (neighbouring threads read neighbouring addresses of a row), a
// block row per outer slice. The chunk stages and the fold (with their updates) run inside the
// thread, in registers.
void schedule_cuda(alg::LogSumExp op, const Target &, const MathCudaKnobs &k) {
  Var i = arg(op.out, 0), o = arg(op.out, 1), block("block"), thread("thread");
  op.out.gpu_tile(i, block, thread, k.block, TailStrategy::GuardWithIf).gpu_blocks(o);
  op.running.compute_at(op.out, thread);
  op.chunk_max.compute_at(op.running, op.chunks.x);
  op.chunk_sum.compute_at(op.running, op.chunks.x);
}

}  // namespace hpipe::sched
