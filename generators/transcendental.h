// Transcendental family: our own vectorisable exp, log and erf (range reduction + polynomials
// fitted by tools/dev/fit_transcendental.py), the elementwise ops over them, and logsumexp.
// Algorithms only (schedules live in schedules/transcendental_*.cpp).
//
// Every function is computed in double and rounded once to the result type; float32 results use
// shorter polynomials (only ~2^-36 is needed before that rounding), float64 results the full ones.
// The expressions are wrapped in strict_float so no target reassociates them (the exact
// Cody-Waite and two-sum steps rely on it) and all CPU targets give bit-identical results, FMA or
// not. Accuracy (measured by tests/test_math.cpp, see runtime/include/hpipe/math.h):
//   float32  exp, log, erf: correctly rounded but for rare cases, max 0.50 ULP (every bit pattern)
//   float64  exp 0.51 ULP, log 0.52 ULP, erf 0.81 ULP (max over 10^6 random points per region)
//
// Layout (Halide order, innermost first): elementwise x(i) -> y(i); logsumexp reduces the middle
// dimension of x(i, r, o) into out(i, o): any axis of a C-order N-D array is (inner, axis, outer).
#pragma once

#include "Halide.h"
#include "generators/common.h"

namespace hpipe::alg {

// exp, log, erf of a float or double Expr, of the same type. Special values as in <cmath>.
Halide::Expr accurate_exp(const Halide::Expr &x);
Halide::Expr accurate_log(const Halide::Expr &x);
Halide::Expr accurate_erf(const Halide::Expr &x);

enum class MathFunction { exp, log, erf };

struct Elementwise {
  Halide::Func y;  // y(i) = f(x(i))
};
Elementwise elementwise(Halide::Func x, MathFunction fn);

// Online, max-shifted logsumexp over r in chunks of `rows_per_chunk` rows: each chunk's maximum,
// then its sum of exp(x - max) (the chunk is still in cache), folded into a running (shift, sum)
// per (i, o). All in double; out = shift + log(sum), rounded to the input type.
struct LogSumExp {
  Halide::RDom chunk_rows;  // rows of one chunk (predicated to the rows that exist)
  Halide::RDom chunks;      // the chunks, in order
  Halide::Func chunk_max;   // (i, c, o): max over the chunk
  Halide::Func chunk_sum;   // (i, c, o): sum of exp(x - shift) over the chunk, in double
  Halide::Func running;     // (i, o) -> {shift, sum}: the fold over chunks
  Halide::Func out;         // (i, o)
};
LogSumExp logsumexp(Halide::Func x, Halide::Expr rows, int rows_per_chunk);

// Estimates: the W2 workload of shared/workloads.md, 10000 x 10000 (10^8 elements), axis 0.
struct TranscendentalEstimates {
  int rows = 10000, columns = 10000;
  Halide::Region flat() const { return {{0, rows * columns}}; }
  Halide::Region matrix() const { return {{0, columns}, {0, rows}, {0, 1}}; }  // (i, r, o)
  Halide::Region reduced() const { return {{0, columns}, {0, 1}}; }
};

}  // namespace hpipe::alg
