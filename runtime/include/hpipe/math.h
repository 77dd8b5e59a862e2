// Transcendentals with stated accuracy: elementwise exp, log, erf and the reduction logsumexp,
// in float32 and float64, on the CPU (AVX-512 / AVX2 / SSE4.1) and CUDA.
//
// Accuracy, as the largest error against the exact value in units of the result's last place
// (ULP), measured by tests/test_math.cpp (float32: every bit pattern of the range in the
// exhaustive test; float64: 10^6 random points over the range plus special regions, against a
// long-double reference). The CPU kernels round identically on every x86 target (FMA or not):
//
//   function  type     max ULP  at                    valid range (outside it: the limits below)
//   exp       float32  0.50     -1.24514532           all x; overflow for x > 88.72284 -> +inf,
//                                                     denormal results for x < -87.33655
//             float64  0.51     -0.3465735…           all x; overflow for x > 709.782712893384
//   log       float32  0.50     …                     x >= 0 (denormals included)
//             float64  0.52     …                     x >= 0 (denormals included)
//   erf       float32  0.50     …                     all x
//             float64  0.81     …                     all x
//
// Special values as C's <cmath>: exp(+inf) = +inf, exp(-inf) = 0, overflow -> +inf, underflow ->
// 0 (gradually, through the denormals); log(0) = -inf, log(x < 0) = NaN, log(+inf) = +inf;
// erf(+-inf) = +-1, erf(-0) = -0; NaN propagates everywhere.
//
// Elementwise ops take views of any rank 1..4; x and y have the same shape. Dense C-order views
// run as one flat kernel call (in pieces of 2^27 elements); other strides run row by row.
// Outputs must not overlap inputs. Inputs are never modified.
//
// logsumexp(x, axis) = log(sum(exp(x), axis)), computed like scipy.special.logsumexp(x, axis):
// shifted by the maximum; a row of all -inf gives -inf, any +inf entry gives +inf, NaN propagates.
// It reads x once (chunks of rows are folded into a running (max, sum) per output element) and
// accumulates in double, so the float32 result is within 1 ULP of the exact value; the float64
// result within (n + 4) * 2^-53 * (1 + |result|) for a reduction of n elements. The output has
// x's shape without `axis` (scipy's keepdims=False); negative axes count from the end.
#pragma once

#include <cstdint>

#include "hpipe/device.h"
#include "hpipe/view.h"

namespace hpipe {

#define HPIPE_MATH_ELEMENTWISE_DECLARE(T, N)                                                 \
  void exp(View<const T, N> x, View<T, N> y, const Options &options = {});                   \
  void log(View<const T, N> x, View<T, N> y, const Options &options = {});                   \
  void erf(View<const T, N> x, View<T, N> y, const Options &options = {});                   \
  /* Allocating forms: return a new host array (x must be host memory). */                  \
  Array<T, N> exp(View<const T, N> x, const Options &options = {});                          \
  Array<T, N> log(View<const T, N> x, const Options &options = {});                          \
  Array<T, N> erf(View<const T, N> x, const Options &options = {});

#define HPIPE_MATH_REDUCE_DECLARE(T, N)                                                      \
  void logsumexp(View<const T, N> x, int axis, View<T, N - 1> out, const Options &options = {}); \
  Array<T, N - 1> logsumexp(View<const T, N> x, int axis, const Options &options = {});

#define HPIPE_MATH_DECLARE(T)                                   \
  HPIPE_MATH_ELEMENTWISE_DECLARE(T, 1)                          \
  HPIPE_MATH_ELEMENTWISE_DECLARE(T, 2)                          \
  HPIPE_MATH_ELEMENTWISE_DECLARE(T, 3)                          \
  HPIPE_MATH_ELEMENTWISE_DECLARE(T, 4)                          \
  HPIPE_MATH_REDUCE_DECLARE(T, 2)                               \
  HPIPE_MATH_REDUCE_DECLARE(T, 3)                               \
  HPIPE_MATH_REDUCE_DECLARE(T, 4)                               \
  /* The whole of a 1-D array, as a number. */ \
  T logsumexp(View<const T, 1> x, const Options &options = {});

HPIPE_MATH_DECLARE(float)
HPIPE_MATH_DECLARE(double)
#undef HPIPE_MATH_DECLARE
#undef HPIPE_MATH_REDUCE_DECLARE
#undef HPIPE_MATH_ELEMENTWISE_DECLARE

}  // namespace hpipe
