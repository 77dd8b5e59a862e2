// Batched 1-D convolution: algorithm only (schedules live in schedules/conv1d_*.cpp).
//
// Layout (Halide dimension order, innermost first; NumPy shapes reversed):
//   signal s(x, i)   NumPy (N, Ls)
//   kernel v(j, i)   NumPy (N, Lv); one kernel shared by every row is passed with a row stride of 0
//   out(k, i)        NumPy (N, Lo); Lo is the output buffer's extent
// out(k, i) = sum_{j < Lv} s(k + offset - j, i) * v(j, i), s being 0 outside [0, Ls): rows of the
// full convolution starting at `offset` (0 for full; NumPy's same and valid are later offsets).
// Any lengths work; the runtime passes the longer of the two operands as the signal.
#pragma once

#include <algorithm>

#include "Halide.h"
#include "generators/common.h"

namespace hpipe::alg {

// How the signal's zero padding is made: `staged` (CPU): padded is zeros, then the row copied in
// by updates, so a schedule can stage rows densely and read them with plain vector loads;
// `bounded` (GPU): padded is a select on the index, inlined into the taps' loads (cached), so
// the whole convolution is one kernel with no staging pass.
struct Conv1dForm {
  enum Kind { staged, bounded } kind;
  // staged: bytes of the vectors a row is copied in, the target's but at most 32 (so that W3's
  // rows of 9 float32 are two vectors with AVX-512 too). A row of at least a vector is copied in
  // whole vectors, the last one shifted back over the one before (a masked store costs AMD CPUs
  // dozens of micro-ops); a shorter row element by element.
  int vector_bytes = 0;
};
inline Conv1dForm conv1d_form(const Halide::Target &t) {
  if (t.has_gpu_feature()) return {Conv1dForm::bounded};
  return {Conv1dForm::staged, std::min(t.natural_vector_size(Halide::UInt(8)), 32)};
}

struct Conv1d {
  Conv1dForm form;
  Halide::Expr taps;           // Lv
  Halide::Func padded;         // padded(x, i): the signal, zero outside [0, Ls)
  Halide::Func conv;           // conv(k, i) = sum_j padded(k + offset - j, i) * v(j, i)
  Halide::Func out;            // = conv; separate so a schedule can accumulate in registers
  Halide::RDom copy_vectors;   // staged, rows of at least a vector: (lane, vector), padded's first update
  Halide::RDom copy_elements;  // staged, shorter rows: [0, Ls), padded's second update
  Halide::RDom kernel;         // [0, Lv): the taps
};
Conv1d conv1d(Halide::Func signal, Halide::Expr signal_length, Halide::Func kernel, Halide::Expr taps,
              Halide::Expr offset, Conv1dForm form);

// Estimates: the large W3 case of shared/workloads.md, N = 100000 rows, Ls = 9, Lv = 7, full.
struct Conv1dEstimates {
  int rows = 100000, signal = 9, taps = 7;
  int out_length() const { return signal + taps - 1; }
  Halide::Region signal_region() const { return {{0, signal}, {0, rows}}; }
  Halide::Region kernel_region() const { return {{0, taps}, {0, rows}}; }
  Halide::Region out() const { return {{0, out_length()}, {0, rows}}; }
};

}  // namespace hpipe::alg
