// CPU-vector and CUDA schedules of the batched 1-D convolution (algorithm: generators/conv1d.h).
#pragma once

#include <cstdint>

#include "generators/conv1d.h"
#include "schedules/knobs.h"

namespace hpipe::sched {

// Kernel lengths with their own unrolled code path (others take the generic tap loop).
constexpr int kConv1dUnrolledTapsMin = 2, kConv1dUnrolledTapsMax = 9;

struct Conv1dCpuKnobs {
  int vector_factor = 1;   // vector width in multiples of the target's natural width
  int rows_per_task = 64;  // rows one parallel task covers
  int rows_per_stage = 8;  // rows padded together before they are convolved
  // Short rows (output rows of at most short_row_length elements; 0: no short-row loop nest) cost
  // a few ns each, so their tasks and stages are counted separately: small tasks there spend
  // their time in the thread pool, not in the rows.
  int short_row_length = 32;
  int short_rows_per_task = 1024;
  int short_rows_per_stage = 16;

  template <class F>
  void visit(F &&f) {
    f("vector_factor", vector_factor, Candidates{1, 2});
    f("rows_per_task", rows_per_task, Candidates{8, 16, 32, 64, 128, 256});
    f("rows_per_stage", rows_per_stage, Candidates{1, 2, 4, 8, 16});
    f("short_row_length", short_row_length, Candidates{0, 16, 32, 64});
    f("short_rows_per_task", short_rows_per_task, Candidates{256, 512, 1024, 2048, 4096});
    f("short_rows_per_stage", short_rows_per_stage, Candidates{4, 8, 16, 32});
  }
  bool valid() const {
    return vector_factor >= 1 && rows_per_stage >= 1 && rows_per_task >= rows_per_stage &&
           rows_per_task % rows_per_stage == 0 && short_row_length >= 0 && short_rows_per_stage >= 1 &&
           short_rows_per_task >= short_rows_per_stage && short_rows_per_task % short_rows_per_stage == 0;
  }
};

struct Conv1dCudaKnobs {
  // 16 x 16: the workloads' rows have at most 16 outputs, so 32 threads along a row would idle
  // half of them (H100, 100000 rows of 9 with 7 taps: 54 us against 63.5 us for 32 x 8).
  int block_k = 16;     // threads of a block along the output row
  int block_rows = 16;  // ... across rows

  template <class F>
  void visit(F &&f) {
    f("block_k", block_k, Candidates{16, 32, 64, 128});
    f("block_rows", block_rows, Candidates{1, 2, 4, 8, 16});
  }
  // The product in 64 bits: in int, 65536 x 65536 wrapped to 0 and passed.
  bool valid() const { return block_k >= 1 && block_rows >= 1 && std::int64_t{block_k} * block_rows <= 1024; }
};

void schedule_cpu(alg::Conv1d op, const Halide::Target &t, const Conv1dCpuKnobs &k);
void schedule_cuda(alg::Conv1d op, const Halide::Target &t, const Conv1dCudaKnobs &k);

struct Conv1dKnobs {
  using Cpu = Conv1dCpuKnobs;
  using Cuda = Conv1dCudaKnobs;
};

}  // namespace hpipe::sched
