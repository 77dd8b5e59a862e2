// CPU-vector and CUDA schedules of the math family (algorithms: generators/math.h).
#pragma once

#include "generators/math.h"
#include "schedules/knobs.h"

namespace hpipe::sched {

// How logsumexp cuts its rows into chunks (alg::LogSumExpChunks), per backend, type and what a
// task reads, not a knob; the AOT generator and hpipe-tune both pass this.
// Rows a chunk. CPU: a chunk's rows
// share one fold (an exp in double per column), and each vector of them stays in L1 between the
// max and the sum pass. Column blocks read a stream per row of the chunk: 16 rows, fewer streams
// for the prefetchers to follow, were faster than 32 on Zen 5 (on a Xeon, whose folds cost more,
// slower). Row vectors fold each row's chunks one after another: 32 rows (16 slower, 64 no faster). The
// sizes measured: docs/performance-notes.md.
// CUDA: each chunk's (shift, sum) goes through device memory and each column folds its chunks one
// after another, so longer chunks save both, as long as a thread's chunk stays in cache for the
// sum pass: 256 bytes of a column (the sizes measured: docs/performance-notes.md).
// Fewer rows than a chunk, as one chunk of just those rows in a loop, on the CPU: float32 up to half
// a chunk (logsumexp along rows of 2 / 4 / 7 1.6-1.75 / 1.45 / 1.0-1.15x faster; rows of 9 to 15
// ran slower in the loop than as a whole chunk unrolled), float64 up to a chunk (rows of 2 / 4 / 7 / 10 / 15
// 2.2 / 1.8 / 1.45 / 1.25 / 1.04x faster); Zen 5, 2026-11-29, docs/performance-notes.md. CUDA:
// whole chunks only (a short chunk not measured there).
inline alg::LogSumExpChunks logsumexp_chunks(const Halide::Target &target, const Halide::Type &type,
                                             alg::LogSumExpReads reads) {
  if (target.has_feature(Halide::Target::CUDA)) return {256 / type.bytes(), 0};
  const int rows = reads == alg::LogSumExpReads::column_blocks ? 16 : 32;
  return {rows, type == Halide::Float(32) ? rows / 2 + 1 : rows};
}

// The rows kernel's block (alg::logsumexp_rows), not a knob: an AVX-512 vector of float32 (two of
// float64, two of AVX2's float32 vectors); the runtime gives it rows of at least this many elements
// (runtime/src/math.cpp, kRowLanes).
constexpr int kLogSumExpRowBlock = 16;

// Elements that share one choice between a function's cheap and full forms (alg::elementwise's
// group_lanes), per backend and type, not a knob: on the CPU a vector of the type, which branches
// once; on CUDA none (every element computes the full form: the kernels run at the copy's speed).
inline int elementwise_group_lanes(const Halide::Target &target, const Halide::Type &type) {
  return target.has_feature(Halide::Target::CUDA) ? 0 : target.natural_vector_size(type);
}

struct MathElementwiseCpuKnobs {
  int vector_factor = 4;            // vector width in multiples of the target's natural float width
  int elements_per_task = 1 << 18;  // elements one parallel task covers, at most

  template <class F>
  void visit(F &&f) {
    f("vector_factor", vector_factor, Candidates{1, 2, 4});
    f("elements_per_task", elements_per_task, Candidates{1 << 14, 1 << 16, 1 << 18, 1 << 20});
  }
  // 1, 2 or 4 vectors a step: the runtime computes in place in multiples of 64 floats, whole
  // vectors of every variant (runtime/src/math.cpp, kInPlaceLanes).
  bool valid() const {
    return (vector_factor == 1 || vector_factor == 2 || vector_factor == 4) && elements_per_task >= 64;
  }
};

struct MathLogSumExpCpuKnobs {
  int vector_factor = 1;        // vector width in multiples of the target's natural float width
  int columns_per_task = 2560;  // the widest block of columns (i) one task folds over every row

  template <class F>
  void visit(F &&f) {
    f("vector_factor", vector_factor, Candidates{1, 2, 4});
    f("columns_per_task", columns_per_task, Candidates{512, 1024, 2560, 5120, 10240});
  }
  bool valid() const { return vector_factor >= 1 && columns_per_task >= 64; }
};

struct MathElementwiseCudaKnobs {
  int block = 256;              // threads of a block
  int elements_per_thread = 4;  // elements each thread computes, a block apart (loads in flight together)

  template <class F>
  void visit(F &&f) {
    f("block", block, Candidates{64, 128, 256, 512, 1024});
    f("elements_per_thread", elements_per_thread, Candidates{1, 2, 4, 8});
  }
  bool valid() const { return block >= 32 && block <= 1024 && elements_per_thread >= 1; }
};

struct MathLogSumExpCudaKnobs {
  int block = 256;      // threads of a block
  int fold_unroll = 8;  // chunks the fold unrolls (their loads and exps overlap)

  template <class F>
  void visit(F &&f) {
    f("block", block, Candidates{64, 128, 256, 512, 1024});
    f("fold_unroll", fold_unroll, Candidates{1, 4, 8, 16});
  }
  bool valid() const { return block >= 32 && block <= 1024 && fold_unroll >= 1; }
};

void schedule_cpu(alg::Elementwise op, const Halide::Target &t, const MathElementwiseCpuKnobs &k);
void schedule_cpu(alg::LogSumExp op, const Halide::Target &t, const MathLogSumExpCpuKnobs &k);
void schedule_cpu(alg::LogSumExpRows op, const Halide::Target &t, const MathLogSumExpCpuKnobs &k);

void schedule_cuda(alg::Elementwise op, const Halide::Target &t, const MathElementwiseCudaKnobs &k);
void schedule_cuda(alg::LogSumExp op, const Halide::Target &t, const MathLogSumExpCudaKnobs &k);
void schedule_cuda(alg::LogSumExpRows op, const Halide::Target &t, const MathLogSumExpCudaKnobs &k);

// The knob structs each backend reads (used by the generators and the tuner): the elementwise
// ops and logsumexp have their own knobs (their best vector widths differ; their CUDA grids
// differ in shape).
struct MathElementwiseKnobs {
  using Cpu = MathElementwiseCpuKnobs;
  using Cuda = MathElementwiseCudaKnobs;
};
struct MathLogSumExpKnobs {
  using Cpu = MathLogSumExpCpuKnobs;
  using Cuda = MathLogSumExpCudaKnobs;
};

}  // namespace hpipe::sched
