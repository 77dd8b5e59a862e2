// Every accuracy bound the kernels are held to, stated once: the tests (tests/test_*.cpp) and the
// tuner's verification (tools/tune/*_tune.cpp) both use these, as tolerance::<name>. Each follows
// the accuracy notes of the op's public header (runtime/include/hpipe/*.h); a test may add the
// error of its own reference. Plain numbers and functions of the problem size, so that another
// language's tests can restate them from here.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace hpipe::tolerance {

// |actual - expected| <= abs + rel * |expected|, per element.
struct Tolerance {
  double abs = 0, rel = 0;
  double limit(double expected) const { return abs + rel * std::abs(expected); }
};

template <class T>
constexpr double epsilon() {
  return std::numeric_limits<T>::epsilon();
}

constexpr Tolerance kExact{0, 0};

// ---- CASSI (hpipe/cassi.h); inputs positive.

// Band sums (A x, Phi): float32 ones are formed in float64 from exact products and rounded once,
// so they are within half an ULP (<= eps/2 relative); float64 ones take up to C + 1 roundings of
// positive terms.
template <class T>
Tolerance cassi_band_sum(std::int64_t bands) {
  if (std::is_same_v<T, float>) return {0, 0.5 * epsilon<T>() * (1 + 1e-6)};
  return {0, 2.0 * (bands + 2) * epsilon<T>()};
}
// Products and quotients (adjoint, pinv_alpha): a few roundings.
template <class T>
Tolerance cassi_few_roundings() {
  return {0, 4 * epsilon<T>()};
}
// Quotients of band sums (pinv): the band sum's error plus a few roundings.
template <class T>
Tolerance cassi_band_sum_quotient(std::int64_t bands) {
  return {0, cassi_band_sum<T>(bands).rel + cassi_few_roundings<T>().rel};
}
// <A x, y> against <x, A^T y>, relative to the first: C + 1 roundings of each sum's terms.
template <class T>
double cassi_adjoint_identity_rel(std::int64_t bands) {
  return 2.0 * (bands + 2) * epsilon<T>();
}
// A(pinv(A x)) and A(pinv_alpha(A x)) against A x: two band sums and the roundings between them.
template <class T>
Tolerance cassi_right_inverse(std::int64_t bands) {
  return {0, 4.0 * (bands + 2) * epsilon<T>()};
}
// W4 in float32, x and mask uniform in (0, 1]: mean |A(pinv_alpha(A x)) - A x| (measured 6.4e-8).
constexpr double kCassiW4RoundTripMae = 1e-6;

// ---- batched dot (hpipe/dot.h); S = sum_k |a[i, k] b[i, k]|.

// The bound of hpipe/dot.h for one row of K products.
template <class T>
double dot_bound(double exact, double magnitude, std::int64_t k) {
  if constexpr (std::is_same_v<T, float>) {
    const double eps32 = std::ldexp(1.0, -24);
    return eps32 * std::abs(exact) + 66 * eps32 * magnitude;
  } else {
    return (100 + double(k) / 1024) * std::ldexp(1.0, -53) * magnitude;
  }
}
// The error of reference::batched_dot itself (long double sums): (K + 1) 2^-64 S.
inline double dot_reference_error(double magnitude, std::int64_t k) {
  return (k + 1) * std::ldexp(1.0, -64) * magnitude;
}
// Inputs of one sign, where S is |exact|: the bound and the reference's error relative to the
// result, for rows of at most k products.
template <class T>
Tolerance dot_same_sign(std::int64_t k) {
  return {0, dot_bound<T>(1, 1, k) + dot_reference_error(1, k)};
}

// ---- conv1d (hpipe/conv1d.h): each output is a sum of at most m = min(La, Lv) products.

// m + 1 roundings relative to sum |a v|, which is the result itself for positive inputs ...
template <class T>
Tolerance conv1d_positive(std::int64_t m) {
  return {0, (m + 2) * epsilon<T>()};
}
// ... and at most m for inputs in (-1, 1).
template <class T>
Tolerance conv1d_signed(std::int64_t m) {
  return {(m + 2) * double(m) * epsilon<T>(), 0};
}

// ---- math (hpipe/math.h)

// The accuracy contract of exp, log and erf (the targets), in ULP of the result.
struct UlpContract {
  double exp, log, erf;
  template <class Fn>  // math_reference.h's Fn
  double of(Fn fn) const {
    return fn == Fn::exp ? exp : fn == Fn::log ? log : erf;
  }
};
constexpr UlpContract kUlpContract{1.0, 1.0, 1.5};

// u float32 ULP as a tolerance: a ULP of a normal value v is at most 2^-23 |v| (and more than
// 2^-24 |v|), of a denormal one 2^-149, so u ULP is allowed as u (2^-149 + 2^-23 |v|). It admits
// at most twice the contract (for checks that have no ULP measure, such as the tuner's), which
// still rejects anything that computes, indexes or writes wrongly.
inline Tolerance float32_ulps(double ulps) { return {ulps * std::ldexp(1.0, -149), ulps * std::ldexp(1.0, -23)}; }

// logsumexp over n elements. float32: 1 ULP, plus 2^-23 absolute (each exp term is a float good
// to about 2^-24 relative, and pairs of terms are added in float, which shows where the result
// nearly cancels to 0); float64: the naive sum's error.
template <class T>
Tolerance logsumexp(std::int64_t n) {
  const double sum_error = double(n + 4) * std::ldexp(1.0, -53);
  return sizeof(T) == 4 ? Tolerance{std::ldexp(1.0, -23), epsilon<float>()} : Tolerance{sum_error, sum_error};
}

// ---- reconstruction (hpipe/recon.h)

// The TV output after n steps is a chain of n - 1 dual updates, each a few roundings of values
// of the order of the image: the error grows about linearly with the steps.
template <class T>
Tolerance tv(int iterations) {
  return {16.0 * (iterations + 1) * epsilon<T>(), 0};
}
// Per-iteration residuals ||y - A x_k|| against the double reference (measured on the small
// scene after 20 iterations: float32 within 6e-7 relative, float64 2e-15).
template <class T>
Tolerance recon_residual() {
  return {0, std::is_same_v<T, float> ? 1e-5 : 1e-12};
}
// A float64 reconstruction (a few iterations) against the double reference, element by element.
constexpr Tolerance kReconFloat64{1e-12, 1e-12};
// PSNR of a float32 reconstruction against the double reference's (the bound; measured
// < 1e-7 dB).
constexpr double kReconPsnrAgreementDb = 0.05;

}  // namespace hpipe::tolerance
