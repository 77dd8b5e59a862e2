// CPU-vector and CUDA schedules of the CASSI family (algorithms: generators/cassi.h).
#pragma once

#include <cstdint>

#include "generators/cassi.h"
#include "schedules/common.h"
#include "schedules/knobs.h"

namespace hpipe::sched {

struct CassiCpuKnobs {
  int vector_factor = 1;   // vector width in multiples of the target's natural width
  int rows_per_task = 32;  // rows of one image a parallel task covers
  int sum_per_vector = 1;  // reductions: 1 = accumulate one vector in registers, 0 = a whole row in L1
  // Rows of sums a band-sum scatter (width dispersion) computes at a time, at most a task's: the
  // group interiors read every band's rows of the block, and the edges read them again, so a
  // block's C x rows rows of the cube should stay in L2: 448 KiB at W4 for 16 rows, for L2s of
  // 1 MiB and more (Zen 5: 6-8% faster than 8 rows, whose 8 KiB runs per band the prefetchers
  // follow less well). A task's 32 rows, 896 KiB, outgrew a 512 KiB L2 (Zen 3) and made A 1.5x
  // slower there; tune 8 on such a core (docs/performance-notes.md).
  int scatter_rows = 16;
  // A's group interiors read 7 bands' streams at once, more than a core's prefetchers follow:
  // software prefetches this many elements ahead of each band's loads (0: none). On Zen 5, W4 A
  // 1.15-1.2x faster with 256 or 512 where the memory was not loaded by others, in cache 1.1x
  // (docs/performance-notes.md, 2026-11-27, eighth session).
  int prefetch_ahead = 512;
  // Cube outputs (A^T, A+, the inverse, the shifts): parallel tasks a call's band planes are cut
  // into, whole planes each, at least as many as cores.
  int cube_tasks = 16;

  template <class F>
  void visit(F &&f) {
    f("vector_factor", vector_factor, Candidates{1, 2, 4});
    f("rows_per_task", rows_per_task, Candidates{1, 2, 4, 8, 16, 32, 64, 128});
    f("sum_per_vector", sum_per_vector, Candidates{0, 1});
    f("scatter_rows", scatter_rows, Candidates{1, 2, 4, 8, 16, 32});
    f("prefetch_ahead", prefetch_ahead, Candidates{0, 128, 256, 512, 1024});
    f("cube_tasks", cube_tasks, Candidates{4, 8, 16, 32, 64});
  }
  bool valid() const {
    return vector_factor >= 1 && rows_per_task >= 1 && (sum_per_vector | 1) == 1 && scatter_rows >= 1 &&
           prefetch_ahead >= 0 && cube_tasks >= 1;
  }
};

struct CassiCudaKnobs {
  int block_w = 32;  // threads of a block along width
  int block_h = 4;   // ... along height
  // Bands a thread handles in one unrolled step, so that their loads are in flight together: a band
  // sum's step, or the bands of its pixel that a thread writes into a cube.
  int bands_per_thread = 2;
  // Batch items a thread handles, unrolled: they share the mask's loads (and Phi's) and the index
  // arithmetic.
  int items_per_thread = 4;
  // Where A+ and the column-count inverse divide the measurement (y / Phi, y / alpha): 0 per cube
  // element (those cube kernels were bound by the SMs under ncu), 1 once per measurement pixel in a
  // kernel of its own, 2 once per pixel of the region a block reads, in its shared memory; with 1
  // and 2 the cube kernel only multiplies, as A^T's does.
  int divide_measurement = 0;
  // The defaults: the least total time of A, A^T, A+ and the column-count inverse at W4 over the
  // 160 variants of hpipe-tune's bundle on an H100, 2026-11-25; A and the inverse have their own
  // (OpKnobDefaults below; docs/performance-notes.md).

  template <class F>
  void visit(F &&f) {
    f("block_w", block_w, Candidates{16, 32, 64, 128});
    f("block_h", block_h, Candidates{1, 2, 4, 8, 16});
    f("bands_per_thread", bands_per_thread, Candidates{1, 2, 4, 7, 8});
    f("items_per_thread", items_per_thread, Candidates{1, 2, 4});
    f("divide_measurement", divide_measurement, Candidates{0, 1, 2});
  }
  // The product in 64 bits: in int, 65536 x 65536 wrapped to 0 and passed.
  bool valid() const {
    return block_w >= 1 && block_h >= 1 && std::int64_t{block_w} * block_h <= 1024 && bands_per_thread >= 1 &&
           items_per_thread >= 1 && divide_measurement >= 0 && divide_measurement <= 2;
  }
};

// sum_per_vector and scatter_rows place the band sum's accumulator: ops without a band sum ignore
// them; only A prefetches; only cube outputs are cut into cube_tasks.
template <>
struct UnusedKnobs<CassiCpuKnobs, alg::CassiForward> {
  static constexpr const char *names = "cube_tasks";
};
template <>
struct UnusedKnobs<CassiCpuKnobs, alg::CassiAdjoint> {
  static constexpr const char *names = "sum_per_vector,scatter_rows,prefetch_ahead";
};
template <>
struct UnusedKnobs<CassiCpuKnobs, alg::CassiPinvAlpha> {
  static constexpr const char *names = "sum_per_vector,scatter_rows,prefetch_ahead";
};
template <>
struct UnusedKnobs<CassiCpuKnobs, alg::CassiShift> {
  static constexpr const char *names = "sum_per_vector,scatter_rows,prefetch_ahead";
};
template <>
struct UnusedKnobs<CassiCpuKnobs, alg::CassiPhi> {
  static constexpr const char *names = "prefetch_ahead,cube_tasks";
};
template <>
struct UnusedKnobs<CassiCpuKnobs, alg::CassiPinv> {
  static constexpr const char *names = "prefetch_ahead";
};
// hpipe-tune's bundle on an H100, 2026-11-27 (80 variants an op, kernel times at W4): A, a band sum
// alone, is fastest with one band and one item a thread in rows of 64 threads, 0.059 ms against
// the family's 0.067; the inverse with the division once and 4 bands, 0.065 against 0.069 (A+ and
// A^T: the family's within 3%).
template <>
struct OpKnobDefaults<CassiCudaKnobs, alg::CassiForward> {
  static CassiCudaKnobs get() {
    CassiCudaKnobs k;
    k.block_w = 64, k.block_h = 1, k.bands_per_thread = 1, k.items_per_thread = 1;
    return k;
  }
};
template <>
struct OpKnobDefaults<CassiCudaKnobs, alg::CassiPinvAlpha> {
  static CassiCudaKnobs get() {
    CassiCudaKnobs k;
    k.block_w = 64, k.bands_per_thread = 4, k.divide_measurement = 1;
    return k;
  }
};
// divide_measurement: only A+ and the column-count inverse divide the measurement.
template <>
struct UnusedKnobs<CassiCudaKnobs, alg::CassiForward> {
  static constexpr const char *names = "divide_measurement";
};
template <>
struct UnusedKnobs<CassiCudaKnobs, alg::CassiAdjoint> {
  static constexpr const char *names = "divide_measurement";
};
template <>
struct UnusedKnobs<CassiCudaKnobs, alg::CassiPhi> {
  static constexpr const char *names = "divide_measurement";
};
template <>
struct UnusedKnobs<CassiCudaKnobs, alg::CassiShift> {
  static constexpr const char *names = "divide_measurement";
};

void schedule_cpu(alg::CassiForward op, const Halide::Target &t, const CassiCpuKnobs &k);
void schedule_cpu(alg::CassiAdjoint op, const Halide::Target &t, const CassiCpuKnobs &k);
void schedule_cpu(alg::CassiPhi op, const Halide::Target &t, const CassiCpuKnobs &k);
void schedule_cpu(alg::CassiPinv op, const Halide::Target &t, const CassiCpuKnobs &k);
void schedule_cpu(alg::CassiPinvAlpha op, const Halide::Target &t, const CassiCpuKnobs &k);
void schedule_cpu(alg::CassiShift op, const Halide::Target &t, const CassiCpuKnobs &k);
// A's prefetches (prefetch_ahead).
LoweringPasses cpu_lowering_passes(const alg::CassiForward &op, const Halide::Target &t, const CassiCpuKnobs &k);

void schedule_cuda(alg::CassiForward op, const Halide::Target &t, const CassiCudaKnobs &k);
void schedule_cuda(alg::CassiAdjoint op, const Halide::Target &t, const CassiCudaKnobs &k);
void schedule_cuda(alg::CassiPhi op, const Halide::Target &t, const CassiCudaKnobs &k);
void schedule_cuda(alg::CassiPinv op, const Halide::Target &t, const CassiCudaKnobs &k);
void schedule_cuda(alg::CassiPinvAlpha op, const Halide::Target &t, const CassiCudaKnobs &k);
void schedule_cuda(alg::CassiShift op, const Halide::Target &t, const CassiCudaKnobs &k);

// Gives each dispersion axis its own code, with the other axis's offsets folded away; both get
// the schedule `f` has at the time of the call.
inline void specialize_on_axis(Halide::Func f, const Halide::Expr &axis) {
  f.specialize(axis == 0);
  f.specialize(axis == 1);
  f.specialize_fail("the dispersion axis must be 0 (width) or 1 (height)");
}

// The knob structs each backend of the family reads (used by the generators and the tuner).
struct CassiKnobs {
  using Cpu = CassiCpuKnobs;
  using Cuda = CassiCudaKnobs;
};

}  // namespace hpipe::sched
