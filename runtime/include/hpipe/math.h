// Transcendentals with stated accuracy: elementwise exp, log, erf and the reduction logsumexp,
// in float32 and float64, on the CPU (AVX-512 / AVX2 / SSE4.1) and CUDA.
//
// Accuracy, as the largest error against the exact value in units of the result's last place
// (ULP). float32: every one of the 2^32 inputs (HPIPE_EXHAUSTIVE=1 ./hpipe_tests, against double);
// float64: 2.2-2.6 million random points per function over the range and its special regions
// (the reduction intervals, denormals, the polynomial breaks), against long double. The
// polynomials contract into FMA where the CPU has it (the AVX-512 and AVX2 code: the same maxima
// on the subsets ctest runs on both); the SSE4.1 code rounds their multiplies and adds separately
// and is measured on its own (HPIPE_CPU_LIMIT=sse41):
//
//   function  type     max ULP  (SSE4.1)  at x =        valid range
//   exp       float32  0.764    (0.764)   -87.7155304   all x; +inf above 88.7228394, denormal
//                                                       results below -87.3365479, 0 below -103.972
//             float64  0.768    (0.768)   -708.783534   all x; +inf above 709.782712893384,
//                                                       denormal below -708.396, 0 below -745.133
//   log       float32  0.827    (0.824)   1.41364205    x >= 0, denormals included
//             float64  0.820    (0.820)   1.41329209    x >= 0, denormals included
//   erf       float32  1.155    (1.337)   1.02700019    all x (+-1 from |x| >= 3.95)
//             float64  1.209    (1.355)   0.993058382   all x (+-1 from |x| >= 6)
//
// float32 functions are computed in float arithmetic (16 lanes per AVX-512 vector), float64 in
// double. The exact steps (Cody-Waite reductions, two-term sums, the scaling by 2^k) are strict:
// no reassociation or contraction. CUDA kernels use the same algorithms; on a GPU (an H100) the
// tests check them against the same contract on 38147 random points per function and type in
// [-4, 4] (the sweeps above ran on the CPU only).
//
// Special values as C's <cmath>: exp(+inf) = +inf, exp(-inf) = 0, overflow -> +inf, underflow ->
// 0 (gradually, through the denormals); log(0) = -inf, log(x < 0) = NaN, log(+inf) = +inf;
// erf(+-inf) = +-1, erf(-0) = -0; NaN propagates everywhere.
//
// Elementwise ops take views of any rank 1..4; x and y have the same shape. Dense C-order views
// run as one flat kernel call (in pieces of 2^27 elements); a 2-D x of strided rows into a dense y
// (a transposed array into a C-order y) is gathered on the worker threads in tiles of whole cache
// lines of x (few rows: also cut across columns), each computed from a dense copy; other strides
// run row by row.
// y may be x itself (the same view: in place, as np.exp(x, out=x)); otherwise outputs must not
// overlap inputs. Inputs are never modified but in place.
//
// logsumexp(x, axis) = log(sum(exp(x), axis)), computed like scipy.special.logsumexp(x, axis):
// shifted by the maximum; a row of all -inf gives -inf, any +inf entry gives +inf, NaN propagates.
// It reads x from memory once (chunks of rows are folded into a running (max, sum) per output
// element; rows that stay in cache are read a second time from there) and accumulates in double.
// float32 result: within 1 ULP plus 2^-23 absolute of the exact value (the terms exp(x - max) are
// computed in float lanes, each within about 2^-24 relative, and added in pairs in float, another
// 2^-24, before the sum in double; this shows only where the result nearly cancels to 0: 2^-23.8
// measured there, and at most 0.54 of this bound anywhere); float64: within (n + 4) 2^-53 (1 +
// |result|) for a reduction of n elements. The output has x's shape without `axis` (scipy's
// keepdims=False); negative axes count from the end. Reducing the last (contiguous) axis reads
// rows of at least 16 elements in place: on the CPU, rows of 32 (float64: 16) to 131071 each in
// two passes, the second from cache (its maximum, then its sum of exp(x - max), in blocks of 16
// lanes), by the same code whatever the call's rows, but rows of 8192 or more in a call of fewer
// than two rows per thread; those, rows of 131072 or more and fewer than 16 rows of other lengths
// from 16 on as blocks of 16 lanes whose 16 partial results per row are combined in double with
// the row's other elements. A call with fewer than two such rows per thread cuts them into
// segments, each with its partial results, so that every thread has work: those results can
// differ in the last bit from a call with another thread count or more rows. Other (shorter or
// strided) rows are transposed a few thousand at a time into scratch that stays in cache (on CUDA:
// all of x, for one call); so a float32 row of 16 to 31 elements (on CUDA of 16 to 131071) can
// differ in the last bit (within the bounds above) between a call with fewer than 16 rows and one
// with more. On the CPU, a reduction of 1024 elements or more down columns (any axis but the
// last), or along rows that are transposed (above), is cut into segments by its length alone,
// whose partial results are combined in double, so that every thread has work however few the
// columns. Every other result (these included) is the same bits whatever the threads, the other
// columns and slices of the call, and wherever x lies in memory.
#pragma once

#include <cstdint>

#include "hpipe/device.h"
#include "hpipe/view.h"

namespace hpipe {

// exp, elementwise: into y (x's shape), or into a new host array (x must be host memory).
void exp(View<const float, 1> x, View<float, 1> y, const Options &options = {});
void exp(View<const float, 2> x, View<float, 2> y, const Options &options = {});
void exp(View<const float, 3> x, View<float, 3> y, const Options &options = {});
void exp(View<const float, 4> x, View<float, 4> y, const Options &options = {});
void exp(View<const double, 1> x, View<double, 1> y, const Options &options = {});
void exp(View<const double, 2> x, View<double, 2> y, const Options &options = {});
void exp(View<const double, 3> x, View<double, 3> y, const Options &options = {});
void exp(View<const double, 4> x, View<double, 4> y, const Options &options = {});
Array<float, 1> exp(View<const float, 1> x, const Options &options = {});
Array<float, 2> exp(View<const float, 2> x, const Options &options = {});
Array<float, 3> exp(View<const float, 3> x, const Options &options = {});
Array<float, 4> exp(View<const float, 4> x, const Options &options = {});
Array<double, 1> exp(View<const double, 1> x, const Options &options = {});
Array<double, 2> exp(View<const double, 2> x, const Options &options = {});
Array<double, 3> exp(View<const double, 3> x, const Options &options = {});
Array<double, 4> exp(View<const double, 4> x, const Options &options = {});

// log, elementwise: into y (x's shape), or into a new host array (x must be host memory).
void log(View<const float, 1> x, View<float, 1> y, const Options &options = {});
void log(View<const float, 2> x, View<float, 2> y, const Options &options = {});
void log(View<const float, 3> x, View<float, 3> y, const Options &options = {});
void log(View<const float, 4> x, View<float, 4> y, const Options &options = {});
void log(View<const double, 1> x, View<double, 1> y, const Options &options = {});
void log(View<const double, 2> x, View<double, 2> y, const Options &options = {});
void log(View<const double, 3> x, View<double, 3> y, const Options &options = {});
void log(View<const double, 4> x, View<double, 4> y, const Options &options = {});
Array<float, 1> log(View<const float, 1> x, const Options &options = {});
Array<float, 2> log(View<const float, 2> x, const Options &options = {});
Array<float, 3> log(View<const float, 3> x, const Options &options = {});
Array<float, 4> log(View<const float, 4> x, const Options &options = {});
Array<double, 1> log(View<const double, 1> x, const Options &options = {});
Array<double, 2> log(View<const double, 2> x, const Options &options = {});
Array<double, 3> log(View<const double, 3> x, const Options &options = {});
Array<double, 4> log(View<const double, 4> x, const Options &options = {});

// erf, elementwise: into y (x's shape), or into a new host array (x must be host memory).
void erf(View<const float, 1> x, View<float, 1> y, const Options &options = {});
void erf(View<const float, 2> x, View<float, 2> y, const Options &options = {});
void erf(View<const float, 3> x, View<float, 3> y, const Options &options = {});
void erf(View<const float, 4> x, View<float, 4> y, const Options &options = {});
void erf(View<const double, 1> x, View<double, 1> y, const Options &options = {});
void erf(View<const double, 2> x, View<double, 2> y, const Options &options = {});
void erf(View<const double, 3> x, View<double, 3> y, const Options &options = {});
void erf(View<const double, 4> x, View<double, 4> y, const Options &options = {});
Array<float, 1> erf(View<const float, 1> x, const Options &options = {});
Array<float, 2> erf(View<const float, 2> x, const Options &options = {});
Array<float, 3> erf(View<const float, 3> x, const Options &options = {});
Array<float, 4> erf(View<const float, 4> x, const Options &options = {});
Array<double, 1> erf(View<const double, 1> x, const Options &options = {});
Array<double, 2> erf(View<const double, 2> x, const Options &options = {});
Array<double, 3> erf(View<const double, 3> x, const Options &options = {});
Array<double, 4> erf(View<const double, 4> x, const Options &options = {});

// logsumexp along `axis`: into out (x's shape without the axis), or into a new host array.
void logsumexp(View<const float, 2> x, int axis, View<float, 1> out, const Options &options = {});
void logsumexp(View<const float, 3> x, int axis, View<float, 2> out, const Options &options = {});
void logsumexp(View<const float, 4> x, int axis, View<float, 3> out, const Options &options = {});
void logsumexp(View<const double, 2> x, int axis, View<double, 1> out, const Options &options = {});
void logsumexp(View<const double, 3> x, int axis, View<double, 2> out, const Options &options = {});
void logsumexp(View<const double, 4> x, int axis, View<double, 3> out, const Options &options = {});
Array<float, 1> logsumexp(View<const float, 2> x, int axis, const Options &options = {});
Array<float, 2> logsumexp(View<const float, 3> x, int axis, const Options &options = {});
Array<float, 3> logsumexp(View<const float, 4> x, int axis, const Options &options = {});
Array<double, 1> logsumexp(View<const double, 2> x, int axis, const Options &options = {});
Array<double, 2> logsumexp(View<const double, 3> x, int axis, const Options &options = {});
Array<double, 3> logsumexp(View<const double, 4> x, int axis, const Options &options = {});
// The whole of a 1-D array, as a number.
float logsumexp(View<const float, 1> x, const Options &options = {});
double logsumexp(View<const double, 1> x, const Options &options = {});

}  // namespace hpipe
