// CPU-vector and CUDA schedules of the batched dot product (algorithm: generators/dot.h).
#pragma once

#include "generators/dot.h"
#include "schedules/knobs.h"

namespace hpipe::sched {

struct DotCpuKnobs {
  int chunks_per_task = 32;  // chunks of 2048 products one parallel task reduces

  template <class F>
  void visit(F &&f) {
    f("chunks_per_task", chunks_per_task, Candidates{4, 8, 16, 32, 64, 128});
  }
  bool valid() const { return chunks_per_task >= 1; }
};

struct DotCudaKnobs {
  int rows_per_block = 64;  // threads of the final per-row pass

  template <class F>
  void visit(F &&f) {
    f("rows_per_block", rows_per_block, Candidates{32, 64, 128, 256});
  }
  bool valid() const { return rows_per_block >= 1 && rows_per_block <= 1024; }
};

void schedule_cpu(alg::BatchedDot op, const Halide::Target &t, const DotCpuKnobs &k);
void schedule_cpu(alg::BatchedDotColumns op, const Halide::Target &t, const DotCpuKnobs &k);
void schedule_cuda(alg::BatchedDot op, const Halide::Target &t, const DotCudaKnobs &k);
void schedule_cuda(alg::BatchedDotColumns op, const Halide::Target &t, const DotCudaKnobs &k);

struct DotKnobs {
  using Cpu = DotCpuKnobs;
  using Cuda = DotCudaKnobs;
};

}  // namespace hpipe::sched
