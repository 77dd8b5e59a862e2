// Reference of the batched dot product: plain loops over NumPy-order (N, K) arrays, accumulated
// in long double (x86-64: 64-bit significand), so its own error, at most about K * 2^-64 of
// sum |a b|, stays far below the float64 bound under test.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace hpipe::reference {

struct DotResult {
  std::vector<double> value;      // sum_k a[i, k] b[i, k]
  std::vector<double> magnitude;  // sum_k |a[i, k] b[i, k]|, the scale of the error bounds
};

inline DotResult batched_dot(const std::vector<double> &a, const std::vector<double> &b, std::int64_t n,
                             std::int64_t k) {
  DotResult r;
  for (std::int64_t i = 0; i < n; i++) {
    long double sum = 0, magnitude = 0;
    for (std::int64_t j = 0; j < k; j++) {
      const long double p = static_cast<long double>(a[i * k + j]) * static_cast<long double>(b[i * k + j]);
      sum += p;
      magnitude += std::fabs(p);
    }
    r.value.push_back(static_cast<double>(sum));
    r.magnitude.push_back(static_cast<double>(magnitude));
  }
  return r;
}

}  // namespace hpipe::reference
