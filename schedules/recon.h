// CPU-vector and CUDA schedules of the reconstruction family (algorithms: generators/recon.h).
#pragma once

#include <cstdint>

#include "generators/recon.h"
#include "schedules/knobs.h"

namespace hpipe::sched {

struct ReconCpuKnobs {
  int vector_factor = 1;  // vector width in multiples of the target's natural width
  int rows_per_task = 8;  // rows per parallel task of the measurement-sized stages (A x, residual)
  // The vectorial TV's sweep and output, in multiples of the natural width: the sweep runs ~57 short
  // row loops per row and step, so wider vectors halve their iterations (Zen 5: 5-7% faster at 2;
  // the per-band TV 8% slower with vector_factor 2: docs/performance-notes.md).
  int sweep_vector_factor = 2;

  template <class F>
  void visit(F &&f) {
    f("vector_factor", vector_factor, Candidates{1, 2, 4});
    f("rows_per_task", rows_per_task, Candidates{4, 8, 16, 32});
    f("sweep_vector_factor", sweep_vector_factor, Candidates{1, 2, 4});
  }
  bool valid() const { return vector_factor >= 1 && rows_per_task >= 1 && sweep_vector_factor >= 1; }
};

struct ReconCudaKnobs {
  int block_w = 32;  // threads of a block along width
  int block_h = 8;   // ... along height

  template <class F>
  void visit(F &&f) {
    f("block_w", block_w, Candidates{16, 32, 64, 128});
    f("block_h", block_h, Candidates{1, 2, 4, 8, 16});
  }
  // The product in 64 bits: in int, 65536 x 65536 wrapped to 0 and passed.
  bool valid() const { return block_w >= 1 && block_h >= 1 && std::int64_t{block_w} * block_h <= 1024; }
};

// The per-band TV and its iterations have no sweep; the vectorial TV alone has no other stage.
template <>
struct UnusedKnobs<ReconCpuKnobs, alg::TvChambolle> {
  static constexpr const char *names = "rows_per_task,sweep_vector_factor";
};
template <>
struct UnusedKnobs<ReconCpuKnobs, alg::GapTvIteration> {
  static constexpr const char *names = "sweep_vector_factor";
};
template <>
struct UnusedKnobs<ReconCpuKnobs, alg::AdmmTvIteration> {
  static constexpr const char *names = "sweep_vector_factor";
};
template <>
struct UnusedKnobs<ReconCpuKnobs, alg::TvVectorial> {
  static constexpr const char *names = "vector_factor,rows_per_task";
};

void schedule_cpu(alg::TvChambolle op, const Halide::Target &t, const ReconCpuKnobs &k);
void schedule_cpu(alg::TvVectorial op, const Halide::Target &t, const ReconCpuKnobs &k);
void schedule_cpu(alg::GapTvIteration op, const Halide::Target &t, const ReconCpuKnobs &k);
void schedule_cpu(alg::AdmmTvIteration op, const Halide::Target &t, const ReconCpuKnobs &k);
void schedule_cpu(alg::GapTvVectorialIteration op, const Halide::Target &t, const ReconCpuKnobs &k);
void schedule_cpu(alg::AdmmTvVectorialIteration op, const Halide::Target &t, const ReconCpuKnobs &k);

void schedule_cuda(alg::TvChambolle op, const Halide::Target &t, const ReconCudaKnobs &k);
void schedule_cuda(alg::TvVectorial op, const Halide::Target &t, const ReconCudaKnobs &k);
void schedule_cuda(alg::GapTvIteration op, const Halide::Target &t, const ReconCudaKnobs &k);
void schedule_cuda(alg::AdmmTvIteration op, const Halide::Target &t, const ReconCudaKnobs &k);
void schedule_cuda(alg::GapTvVectorialIteration op, const Halide::Target &t, const ReconCudaKnobs &k);
void schedule_cuda(alg::AdmmTvVectorialIteration op, const Halide::Target &t, const ReconCudaKnobs &k);

struct ReconKnobs {
  using Cpu = ReconCpuKnobs;
  using Cuda = ReconCudaKnobs;
};

}  // namespace hpipe::sched
