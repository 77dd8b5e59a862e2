// CUDA schedule of the batched 1-D convolution (its bounded form: the padding is a select in the
// taps' loads): one kernel, one thread per output element summing its taps in a register, in
// blocks of block_k x block_rows. The blocks of both dimensions are fused into the grid's x
// dimension (its y dimension stops at 65535: 524280 rows of 8). One launch a call matters for
// tiny inputs: a launch costs the host 3-5 us (docs/performance-notes.md).
//
// 10^5 rows of 9, 7 taps: 23.0 us (18% of BM_cuda_copy; with the staged padding, three launches: 50.4 us),
// 5 rows (W3 case A) 10.2 us a call (17.5); H100 80GB HBM3 (sm_80 PTX), hpipe_bench median of 3, 2026-11-27.
#include "schedules/common.h"
#include "schedules/conv1d.h"

namespace hpipe::sched {

using namespace Halide;

void schedule_cuda(alg::Conv1d op, const Target &, const Conv1dCudaKnobs &k) {
  _halide_user_assert(op.form.kind == alg::Conv1dForm::bounded)
      << "the CUDA schedule of conv1d is for its bounded form";
  Var x = arg(op.out, 0), i = arg(op.out, 1);
  Var xo("xo"), io("io"), xi("xi"), ii("ii"), tiles("tiles");
  op.out.tile(x, i, xo, io, xi, ii, k.block_k, k.block_rows, TailStrategy::GuardWithIf)
      .fuse(xo, io, tiles)
      .gpu_blocks(tiles)
      .gpu_threads(xi, ii);
  op.conv.compute_at(op.out, xi);  // both stages inside the thread; padded is inline
}

}  // namespace hpipe::sched
