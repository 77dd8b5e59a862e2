// Batched 1-D convolution, row by row, with NumPy's np.convolve semantics (a true convolution:
// the kernel is flipped), so out[i] == np.convolve(a[i], v[i], mode).
//
// Shapes (NumPy order): signals a (N, La); kernels v (N, Lv), one per row, or (Lv,), one shared by
// every row; out (N, conv1d_length(La, Lv, mode)). With m = min(La, Lv), M = max(La, Lv):
//   full    length La + Lv - 1      full[t] = sum_j a[t - j] v[j]  (zero outside)
//   same    length M                full[t + (m - 1) / 2]      (centred as NumPy does)
//   valid   length M - m + 1        full[t + m - 1]
// La < Lv is legal: like NumPy the longer operand is the signal (the results are the same
// convolution). Every length must be at least 1 (N may be 0). Kernels of 2..9 taps take unrolled
// code paths.
//
// Accuracy: each output is a sum of at most m products in the element type (m roundings).
// Non-finite values: every output is summed over all m taps of the shorter operand against the
// longer one padded with zeros, so an output where a NaN or +-inf of the shorter operand (the
// kernel, or the row when it is the shorter) falls on the padding is NaN (0 x inf), where
// np.convolve, which leaves that term out, may give a number. Otherwise, and for non-finite
// values in the longer operand, np.convolve's results.
// Any strides are accepted; a non-unit innermost stride costs a copy. Outputs must not overlap
// inputs.
#pragma once

#include <cstdint>

#include "hpipe/device.h"
#include "hpipe/view.h"

namespace hpipe {

enum class ConvMode { full, same, valid };

// Output length of np.convolve(a, v, mode) for lengths la, lv >= 1 (hpipe::Error otherwise).
std::int64_t conv1d_length(std::int64_t la, std::int64_t lv, ConvMode mode);
const char *to_string(ConvMode mode);

// One kernel per row: v is (N, Lv).
void conv1d(View<const float, 2> a, View<const float, 2> v, ConvMode mode, View<float, 2> out,
            const Options &options = {});
void conv1d(View<const double, 2> a, View<const double, 2> v, ConvMode mode, View<double, 2> out,
            const Options &options = {});
// One kernel for every row: v is (Lv,).
void conv1d(View<const float, 2> a, View<const float, 1> v, ConvMode mode, View<float, 2> out,
            const Options &options = {});
void conv1d(View<const double, 2> a, View<const double, 1> v, ConvMode mode, View<double, 2> out,
            const Options &options = {});

// Allocating forms: return a new host array of shape (N, conv1d_length(La, Lv, mode)).
Array<float, 2> conv1d(View<const float, 2> a, View<const float, 2> v, ConvMode mode = ConvMode::full,
                       const Options &options = {});
Array<double, 2> conv1d(View<const double, 2> a, View<const double, 2> v, ConvMode mode = ConvMode::full,
                        const Options &options = {});
Array<float, 2> conv1d(View<const float, 2> a, View<const float, 1> v, ConvMode mode = ConvMode::full,
                       const Options &options = {});
Array<double, 2> conv1d(View<const double, 2> a, View<const double, 1> v, ConvMode mode = ConvMode::full,
                        const Options &options = {});

}  // namespace hpipe
