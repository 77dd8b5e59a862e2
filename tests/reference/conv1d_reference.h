// Reference of np.convolve(a, v, mode), row by row, in double: written the way NumPy computes it
// (numpy/core/numeric.py convolve, multiarray correlate): swap so that the first operand is the
// longer, then correlate it with the reversed shorter one, padding n_left = m - 1 (full), m / 2
// (same) or 0 (valid) zeros on the left.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hpipe::reference {

// One row: np.convolve(a, v, mode) for mode "full", "same" or "valid".
inline std::vector<double> np_convolve(std::vector<double> a, std::vector<double> v, const std::string &mode) {
  if (v.size() > a.size()) a.swap(v);
  const auto n = static_cast<std::int64_t>(a.size()), m = static_cast<std::int64_t>(v.size());
  std::int64_t n_left = 0, length = n - m + 1;  // valid
  if (mode == "same") n_left = m / 2, length = n;
  if (mode == "full") n_left = m - 1, length = n + m - 1;
  std::vector<double> out(static_cast<std::size_t>(length), 0.0);
  for (std::int64_t k = 0; k < length; k++) {
    double sum = 0;
    for (std::int64_t j = 0; j < m; j++) {
      const std::int64_t x = k - n_left + j;
      if (x >= 0 && x < n) sum += a[x] * v[m - 1 - j];
    }
    out[k] = sum;
  }
  return out;
}

// Every row of a (n, la) with its own kernel (v is (n, lv)) or a shared one (v is (lv,)); the
// result is (n, Lo) flattened in C order.
inline std::vector<double> batched_convolve(const std::vector<double> &a, const std::vector<double> &v, std::int64_t n,
                                            std::int64_t la, std::int64_t lv, bool shared, const std::string &mode) {
  std::vector<double> out;
  for (std::int64_t i = 0; i < n; i++) {
    const std::vector<double> row(a.begin() + i * la, a.begin() + (i + 1) * la);
    const std::int64_t v0 = shared ? 0 : i * lv;
    const std::vector<double> kernel(v.begin() + v0, v.begin() + v0 + lv);
    const auto r = np_convolve(row, kernel, mode);
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

}  // namespace hpipe::reference
