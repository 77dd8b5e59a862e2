// Independent references for the math family: the C library in higher precision
// (double for float32 results, long double for float64), ULP error in the result's format, and
// logsumexp as scipy.special.logsumexp computes it, in plain loops.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace hpipe::test::reference {

enum class Fn { exp, log, erf };

inline const char *name(Fn fn) { return fn == Fn::exp ? "exp" : fn == Fn::log ? "log" : "erf"; }

// The exact value, closely enough: double is 2^29 times finer than a float32 ULP, long double
// (x87, 64-bit mantissa) 2^11 times finer than a float64 ULP.
template <class T>
long double exact(Fn fn, T x) {
  if constexpr (sizeof(T) == 4) {
    const double d = x;
    return fn == Fn::exp ? std::exp(d) : fn == Fn::log ? std::log(d) : std::erf(d);
  } else {
    const long double d = x;
    return fn == Fn::exp ? std::exp(d) : fn == Fn::log ? std::log(d) : std::erf(d);
  }
}

// |y - exact| in units of the last place of T at `exact` (denormal ULPs below the normal range).
// Special results must match exactly: NaN for NaN, and where exact rounds to +-inf or 0 in T only
// that value (or, for a finite exact value, the ULP distance) counts.
template <class T>
long double ulp_error(T y, long double exact) {
  constexpr long double kBad = std::numeric_limits<long double>::infinity();
  if (std::isnan(exact)) return std::isnan(y) ? 0 : kBad;
  if (std::isnan(y)) return kBad;
  const T rounded = static_cast<T>(exact);
  if (std::isinf(rounded) || std::isinf(y)) return y == rounded ? 0 : kBad;
  const int digits = std::numeric_limits<T>::digits;             // 24 or 53
  const int min_exp = std::numeric_limits<T>::min_exponent - 1;  // -126 or -1022
  const int e = exact == 0 ? min_exp : std::max(std::ilogb(exact), min_exp);
  const long double ulp = std::ldexp(1.0L, e - (digits - 1));
  return std::fabs(static_cast<long double>(y) - exact) / ulp;
}

// scipy.special.logsumexp over the middle index of x(outer, n, inner) (C order), in long double.
inline std::vector<double> logsumexp(const std::vector<double> &x, std::int64_t outer, std::int64_t n,
                                     std::int64_t inner) {
  std::vector<double> out(static_cast<std::size_t>(outer * inner));
  for (std::int64_t o = 0; o < outer; o++) {
    for (std::int64_t i = 0; i < inner; i++) {
      auto at = [&](std::int64_t r) { return static_cast<long double>(x[(o * n + r) * inner + i]); };
      long double m = -std::numeric_limits<long double>::infinity();
      bool nan = false;
      for (std::int64_t r = 0; r < n; r++) {
        nan |= std::isnan(at(r));
        m = std::max(m, at(r));
      }
      if (nan || !std::isfinite(m)) m = 0;  // scipy: a non-finite maximum shifts by 0
      long double s = 0;
      for (std::int64_t r = 0; r < n; r++) s += std::exp(at(r) - m);
      out[o * inner + i] = static_cast<double>(std::log(s) + m);
    }
  }
  return out;
}

}  // namespace hpipe::test::reference
