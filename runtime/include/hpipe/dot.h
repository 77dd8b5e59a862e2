// Batched dot product: out[i] = sum_k a[i, k] * b[i, k].
//
// Shapes (NumPy order): a, b (N, K); out (N,) (NumPy's `(a * b).sum(1)`; W1's (N, 1) is a reshape).
// Any strides are accepted. A view whose innermost (K) stride is not 1, e.g. a transposed
// view, is copied densely first (measured cost: BM_dot_transposed in hpipe_bench).
//
// Accuracy (eps32 = 2^-24, eps64 = 2^-53, S = sum_k |a[i, k] * b[i, k]|):
//   float32: 32 float partial sums each cover at most 64 products (a chunk of 2048 elements);
//            lanes, chunks and the K % 32 leftover products are summed in double. The bound does not
//            grow with K:   |out[i] - exact| <= eps32 * |exact| + 66 * eps32 * S   (K < 2^31).
//   float64: the same order in double:   |out[i] - exact| <= (100 + K / 2048) * eps64 * S.
// (For comparison, one serial float sum guarantees only about K * eps32 * S.)
//
// Outputs must not overlap inputs. K = 0 or N = 0 is an error.
#pragma once

#include "hpipe/device.h"
#include "hpipe/view.h"

namespace hpipe {

#define HPIPE_DOT_DECLARE(T)                                                                         \
  void batched_dot(View<const T, 2> a, View<const T, 2> b, View<T, 1> out, const Options &options = {}); \
  /* Allocating form: returns a new host array of shape (N,). */                                      \
  Array<T, 1> batched_dot(View<const T, 2> a, View<const T, 2> b, const Options &options = {});

HPIPE_DOT_DECLARE(float)
HPIPE_DOT_DECLARE(double)
#undef HPIPE_DOT_DECLARE

}  // namespace hpipe
