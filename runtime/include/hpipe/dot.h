// Batched dot product: out[i] = sum_k a[i, k] * b[i, k].
//
// Shapes (NumPy order): a, b (N, K); out (N,) (NumPy's `(a * b).sum(1)`; W1's (N, 1) is a reshape).
// Any strides are accepted. Row-major operands (K stride 1) and column-major ones (N stride 1,
// e.g. transposed views of (K, N) arrays) are read in place by their own kernels; any other
// layout, or one operand of each kind, is first copied densely (measured: BM_dot_transposed,
// BM_dot_mixed in hpipe_bench). Transposed views of dense (K, N) host arrays with N < 64 (few
// long rows) are read as N * ceil(64 / N) interleaved columns, so the vectors are full; their
// sums are combined in double (same bound). On the CPU, rows shorter than 32 in any other layout
// are transposed a few thousand at a time into scratch that stays in cache and summed by the
// column-major kernel (its order of sums).
//
// Accuracy (eps32 = 2^-24, eps64 = 2^-53, S = sum_k |a[i, k] * b[i, k]|): no partial sum in the
// element type covers more than 64 products; those partial sums are combined in double.
//   float32: the bound does not grow with K:   |out[i] - exact| <= eps32 * |exact| + 66 * eps32 * S
//            (K < 2^31). Row-major: 32 float lanes over chunks of 2048 elements; column-major:
//            one float sum per 64 consecutive k.
//   float64: the same orders in double:   |out[i] - exact| <= (100 + K / 1024) * eps64 * S.
// The same values in the two layouts are summed in these different orders, so they may round
// differently, each within the bound.
// (For comparison, one serial float sum guarantees only about K * eps32 * S.)
//
// Outputs must not overlap inputs. N = 0 gives an empty result, K = 0 zeros (NumPy's).
#pragma once

#include "hpipe/device.h"
#include "hpipe/view.h"

namespace hpipe {

void batched_dot(View<const float, 2> a, View<const float, 2> b, View<float, 1> out, const Options &options = {});
void batched_dot(View<const double, 2> a, View<const double, 2> b, View<double, 1> out, const Options &options = {});

// Allocating forms: return a new host array of shape (N,).
Array<float, 1> batched_dot(View<const float, 2> a, View<const float, 2> b, const Options &options = {});
Array<double, 1> batched_dot(View<const double, 2> a, View<const double, 2> b, const Options &options = {});

}  // namespace hpipe
