// Math family: our own vectorisable exp, log and erf (range reduction + polynomials
// fitted by tools/dev/fit_math_coefficients.py), the elementwise ops over them, and logsumexp.
// Algorithms only (schedules live in schedules/math_*.cpp).
//
// Everything is computed under strict_float (no reassociation or contraction: the exact Cody-Waite
// and two-sum steps rely on it) but the polynomials, which contract into FMA where the target has
// it: float64 results in double, float32 results in float (16 lanes per AVX-512 vector), without
// branches but one per vector where a function has a cheap form (erf float64, grouped below).
// logsumexp's float32 terms (exp_nonpositive) only need to be good relative to a sum of at least 1
// and are not strict either.
// Accuracy: the table in runtime/include/hpipe/math.h, measured by tests/test_math.cpp.
//
// Layout (Halide order, innermost first): elementwise x(i) -> y(i); logsumexp reduces the middle
// dimension of x(i, r, o) into out(i, o): any axis of a C-order N-D array is (inner, axis, outer).
#pragma once

#include "Halide.h"
#include "generators/common.h"

namespace hpipe::alg {

enum class MathFunction { exp, log, erf };

// exp, log or erf of float or double x (n elements, numbered from 0), of the same type; special
// values as in <cmath>.
//
// Grouped (`group_lanes` > 0, for functions with a cheap form over part of their range: erf
// float64 for |x| < 1): the elements are taken in groups of `group_lanes` (a vector on the CPU,
// where each group branches once); a group computes the full fast parts only where one of its
// elements needs them. Without groups (0, or no cheap form) every element computes the full form.
struct Elementwise {
  // The parts y(i) is finished from: f(x(i))'s polynomial part, computed without strict_float
  // (only a Func of its own escapes the strictness of the expression that uses it), and the exact
  // steps beside it. A Tuple where there are several. Grouped: (lane, group), the cheap parts, then
  // the full ones over `full_lanes` where needs_full(group).
  Halide::Func fast_parts;
  Halide::Func y;  // y(i) = f(x(i)), from x(i) and fast_parts' element i, strict
  int group_lanes = 0;
  Halide::Func needs_full;  // (group): 1 where an element of the group is outside the cheap range
  Halide::RDom flag_lanes;  // needs_full's update, over the group's elements
  Halide::RDom full_lanes;  // fast_parts' update (predicated by needs_full)
};
Elementwise elementwise(Halide::Func x, Halide::Expr n, MathFunction fn, int group_lanes);

// What a task of a logsumexp kernel reads, which shapes its loops (figures:
// docs/performance-notes.md):
// `column_blocks` (x with many columns i: axis 0, any axis but the last): a block of up to
//   thousands of columns over many chunks of rows. The last chunk, the only one that clamps its
//   rows, runs in a loop of its own.
// `row_vectors` (the partial kernel: contiguous rows cut into vectors of 16, about 20 chunks a
//   row): one loop over the chunks (two were slower on Zen 3, no faster on Zen 5 with the
//   prefetch). Each row is one stream of memory, which a schedule prefetches.
enum class LogSumExpReads { column_blocks, row_vectors };

// How logsumexp cuts r into chunks: `rows` rows a chunk (even: float32 sums pairs of rows), the
// last one reading its last row again for the rows past the end; or, for fewer rows than
// `whole_from` (0: never), one chunk of just those rows, whose extent is not a constant.
struct LogSumExpChunks {
  int rows = 0, whole_from = 0;
};

// Online, max-shifted logsumexp over r in chunks (`chunking`): each chunk's maximum,
// then its sum of exp(x - max) (the chunk is still in cache), folded into a running (shift, sum)
// per (i, o) in double; out = shift + log(sum), rounded to the input type, NaN and infinities
// settled there from the largest magnitude and the maximum met (not chunk by chunk). float32
// terms are computed in float lanes (about 1 ULP each), added in pairs and summed in double;
// float64 terms in double (about 1 ULP each), strict.
struct LogSumExp {
  Halide::Expr whole_chunks;  // r >= chunking.whole_from, where there is a short form (undefined otherwise)
  Halide::RDom chunk_rows;    // rows of one chunk (past the last row: the last row again)
  Halide::RDom chunk_terms;   // chunk_sum's steps: float32 pairs of rows, float64 rows
  Halide::RDom chunks;        // the chunks, in order
  Halide::Func chunk_max;     // (i, c, o): max over the chunk (float32: and the largest magnitude's bits)
  Halide::Func chunk_sum;     // (i, c, o): sum of exp(x - shift) over the chunk, in double
  Halide::Func chunk;         // (i, c, o) -> {shift, sum, largest magnitude's bits} (inlined on the CPU)
  Halide::Func running;       // (i, o) -> {shift, sum, largest magnitude's bits}: the fold over chunks
  Halide::Func out;           // (i, o)
  LogSumExpReads reads;
  Halide::Internal::Parameter input;  // x's buffer, where x is a pipeline input (a schedule may prefetch it)
};
// out has type out_type: x's own, or double for partial results that are combined further.
// `input`: x's buffer parameter where x reads one, else an undefined Parameter.
LogSumExp logsumexp(Halide::Func x, Halide::Internal::Parameter input, Halide::Expr rows, LogSumExpChunks chunking,
                    Halide::Type out_type, LogSumExpReads reads);

// logsumexp along contiguous rows x(k, r) of n >= `block` elements (k innermost; softmax's
// normalizer: the runtime gives it rows that stay in cache), each row in two passes: its
// maximum over blocks of `block` lanes, then its sum of exp(x - max), one shift for the row. A
// row is n / block whole blocks and, where n is not a multiple, a tail block that ends at the
// row's end (every load a whole vector), its lanes the whole blocks counted left out of the sum.
// float32 terms in float lanes, the rounding of x - max carried into them (a row's terms share one
// shift: its error would not average out), two whole blocks' terms added in float before the sum
// in double; float64 terms in double, strict. The lanes' maxima and sums are
// combined per row; NaN and infinities as logsumexp's.
struct LogSumExpRows {
  int block = 0;
  Halide::Expr n;             // the rows' length
  Halide::RDom blocks;        // lane_max's update: every block, the tail block last
  Halide::RDom whole_blocks;  // lane_sum's first update: float32 pairs of whole blocks, float64 whole blocks
  Halide::RDom odd_block;     // float32: the last whole block where their count is odd (an update of its own)
  Halide::RDom tail_block;    // lane_sum's last update: the tail block, where there is one
  Halide::RDom lanes;         // row_max's and row_sum's updates: the lanes of a block
  Halide::Func lane_max;      // (lane, r) -> {max, largest magnitude's bits}
  Halide::Func row_max;       // (r) -> {max, largest magnitude's bits}
  Halide::Func lane_sum;      // (lane, r): sum of exp(x - row max) in double
  Halide::Func row_sum;       // (r)
  Halide::Func out;           // (r), out_type
};
LogSumExpRows logsumexp_rows(Halide::Func x, Halide::Expr n, int block, Halide::Type out_type);

// Estimates: the W2 workload of shared/workloads.md, 10000 x 10000 (10^8 elements), axis 0.
struct MathEstimates {
  int rows = 10000, columns = 10000;
  Halide::Region flat() const { return {{0, rows * columns}}; }
  Halide::Region matrix() const { return {{0, columns}, {0, rows}, {0, 1}}; }  // (i, r, o)
  Halide::Region reduced() const { return {{0, columns}, {0, 1}}; }
  Halide::Region rows_of_matrix() const { return {{0, columns}, {0, rows}}; }  // (k, r): W2 along its rows
  Halide::Region per_row() const { return {{0, rows}}; }
};

}  // namespace hpipe::alg
