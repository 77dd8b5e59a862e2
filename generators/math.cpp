#include "generators/math.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "generators/math_coefficients.h"

namespace hpipe::alg {

using namespace Halide;

namespace {

template <class T, std::size_t N>
std::vector<double> list(const T (&c)[N]) {
  return std::vector<double>(c, c + N);
}

// The float64 polynomials (tools/dev/fit_math_coefficients.py); float32 uses coefficients::f32_arithmetic.
struct Coefficients {
  std::vector<double> exp_tail, log_tail, erf_small;
  std::vector<std::vector<double>> erfcx;  // one polynomial in x - center per interval
  std::vector<double> erfc_breaks;         // interval ends: erf(x) = x + x E(x^2) below the
                                           // first, 1 from the last (erf rounds to 1 there)
  std::vector<double> erfc_centers;
};

const Coefficients &f64_coefficients() {
  namespace f64 = coefficients::f64;
  static const Coefficients c{
      list(f64::exp_tail),
      list(f64::log_tail),
      list(f64::erf_small),
      {list(f64::erfcx_0), list(f64::erfcx_1), list(f64::erfcx_2), list(f64::erfcx_3), list(f64::erfcx_4)},
      list(f64::erfc_breaks),
      list(f64::erfc_centers)};
  return c;
}

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInvLn2 = 1.4426950408889634;
// ln 2 = kLn2Hi + kLn2Lo with kLn2Hi = ln 2 to 42 bits: k * kLn2Hi is exact for |k| < 2^11.
constexpr double kLn2Hi = 0x1.62e42fefa3800p-1;
constexpr double kLn2Lo = 0x1.ef35793c76730p-45;
constexpr double kSqrt2 = 1.4142135623730951;
constexpr std::int64_t kSignBit = std::int64_t(1) << 63;

Expr bits_of(const Expr &d) { return reinterpret(Int(64), d); }
Expr from_bits(const Expr &i) { return reinterpret(Float(64), i); }

// NaN / inf / finite tests on the bits. Halide 14 emits predicated (masked) loads with LLVM's
// nnan and ninf flags, after which LLVM folds floating-point NaN tests of the loaded values to
// false (a NaN in a vector's tail came out as inf); integer tests of the bits are not folded.
// float or double d's bits without the sign, as an integer of its width.
Expr magnitude_bits(const Expr &d) {
  const bool single = d.type() == Float(32);
  return reinterpret(single ? Int(32) : Int(64), d) &
         (single ? Expr(std::numeric_limits<std::int32_t>::max()) : Expr(std::numeric_limits<std::int64_t>::max()));
}
constexpr std::int64_t kInfBits = 0x7ff0000000000000;
Expr is_nan_bits(const Expr &d) { return magnitude_bits(d) > Expr(kInfBits); }
Expr is_inf_bits(const Expr &d) { return magnitude_bits(d) == Expr(kInfBits); }

// c[0] + c[1] t + c[2] t^2 + ..., in t's type.
Expr horner(const Expr &t, const std::vector<double> &c) {
  Expr acc = cast(t.type(), Expr(c.back()));
  for (std::size_t j = c.size() - 1; j-- > 0;) acc = acc * t + cast(t.type(), Expr(c[j]));
  return acc;
}

// The same polynomial by Estrin's scheme: pairs c[2j] + c[2j+1] t, then pairs of those with t^2,
// t^4, ...: about log2 of the degree dependent steps instead of one per degree, for a polynomial
// whose latency is not hidden behind other work (logsumexp's fold, once per chunk; float64 erf's
// interval polynomial, a long chain beside the rest of its work: 5% faster than Horner; float32
// erf's degree-15 polynomial, a chain as long as the rest of the work on AVX2, whose 16 registers
// leave no room to interleave vectors: 12% faster at W2 on Zen 3).
// Coefficients may be Exprs (erf's, picked per interval).
Expr estrin(const Expr &t, std::vector<Expr> terms) {
  for (Expr power = t; terms.size() > 1; power = power * power) {
    std::vector<Expr> next;
    for (std::size_t j = 0; j + 1 < terms.size(); j += 2) next.push_back(terms[j] + terms[j + 1] * power);
    if (terms.size() % 2 == 1) next.push_back(terms.back());
    terms = std::move(next);
  }
  return terms[0];
}
Expr estrin(const Expr &t, const std::vector<double> &c) {
  std::vector<Expr> terms;
  for (double v : c) terms.push_back(cast(t.type(), Expr(v)));
  return estrin(t, std::move(terms));
}

// A binary floating-point format, for the exp that runs in either: float64 results in double,
// float32 elementwise results in float (16 lanes per AVX-512 vector instead of 8).
struct Format {
  Type t, i;              // the float type and the integer type of its bits
  int mantissa;           // 52 or 23
  std::int64_t bias;      // 1023 or 127
  double limit;           // |x| clamped to this: beyond it exp() is 0 or inf whatever k
  double ln2_hi, ln2_lo;  // ln 2 = ln2_hi + ln2_lo; k * ln2_hi is exact for every k used
  std::int64_t inf_bits;  // bits of +inf
  Expr c(double v) const { return cast(t, Expr(v)); }
  Expr n(std::int64_t v) const { return cast(i, Expr(v)); }
  Expr bits(const Expr &v) const { return reinterpret(i, v); }
  Expr value(const Expr &b) const { return reinterpret(t, b); }
  Expr pow2(const Expr &k) const { return value((k + n(bias)) << mantissa); }  // normal 2^k
  // The magnitude bits, all but the sign (computed unsigned: 2^63 - 1 as int64 overflows).
  Expr is_nan(const Expr &v) const {
    return (bits(v) & n(std::int64_t((std::uint64_t(1) << (i.bits() - 1)) - 1))) > n(inf_bits);
  }
};
const Format kDouble{Float(64), Int(64), 52, 1023, 800.0, kLn2Hi, kLn2Lo, kInfBits};
// ln 2 to 15 bits (k * ln2_hi is exact for |k| < 2^9; |k| <= 159 here) and the rest in float.
const Format kSingle{Float(32), Int(32), 23, 127, 110.0, 0x1.62e4p-1, 0x1.7f7d1cp-20, 0x7f800000};

// A function split where its strictness changes. Everything is strict (no reassociation or
// contraction: the exact Cody-Waite and two-sum steps rely on it) but the polynomials: strict_float()
// covers a whole expression tree and Halide 14 has no fma(), so a polynomial inside a strict
// expression runs as separate multiplies and adds. `fast` gives the values f(x) is made of, its
// polynomial part computed without strict_float (exact steps among them are strict_float leaves);
// `finish` combines them into f(x), strictly. The elementwise ops compute `fast` as a Func of its
// own, so that its Horner steps contract into FMA where the target has it (each CPU variant is
// tested against the contract); `fused` is all strict, for use inside other expressions.
// A function whose fast parts are much cheaper over part of its range may say so: `cheap(x)` is
// true there, where `finish` needs only the first parts, `cheap_fast(x)` (the rest may be 0).
using Parts = std::vector<Expr>;
struct Split {
  std::function<Parts(const Expr &x)> fast;
  std::function<Expr(const Expr &x, const Parts &parts)> finish;
  std::function<Expr(const Expr &x)> cheap;
  std::function<Parts(const Expr &x)> cheap_fast;
  Expr fused(const Expr &x) const { return strict_float(finish(x, fast(x))); }
};

// exp in format f; NaN propagates, overflow gives +inf, underflow 0. x = k ln2 + r, |r| <= ln2/2
// (k by adding and subtracting 1.5 2^mantissa: one instruction fewer than round() and no split of
// 16-lane vectors), r = r_hi + r_lo with r_hi exact; exp(r) = 1 + r + r^2 P(r) (P fast) with
// 1 + r_hi kept as an exact two-term sum, and 2^k applied in two exact-or-once steps (denormal
// results round once).
struct ExpReduction {
  Expr kd, k, r_hi, r_lo;
  // x is clamped to [lowest, highest].
  ExpReduction(const Expr &x, const Format &f, double lowest, double highest) {
    Expr xc = clamp(x, f.c(lowest), f.c(highest));
    Expr shifter = f.c(std::ldexp(1.5, f.mantissa));
    // Explicitly strict: Halide's simplifier would otherwise cancel the shifter before lowering.
    Expr shifted = strict_float(xc * f.c(kInvLn2) + shifter);
    kd = strict_float(shifted - shifter);
    // k from the bits (its low bits are k): AVX2 has no vector conversion of double to int64, and
    // cast() ran as four scalar conversions per vector.
    k = f.bits(shifted) - f.bits(shifter);
    r_hi = xc - kd * f.c(f.ln2_hi);  // exact
    r_lo = kd * f.c(-f.ln2_lo);
  }
};

// `tail(r)` is P(r), by Horner's or Estrin's scheme.
Split exp_split(const Format &f, std::function<Expr(const Expr &r)> tail) {
  // Parts: 1 + r_hi as one_hi + (the rest), and k.
  return {[=](const Expr &x) {
            ExpReduction e(x, f, -f.limit, f.limit);
            Expr r = strict_float(e.r_hi + e.r_lo);
            Expr one_hi = strict_float(f.c(1.0) + e.r_hi);
            Expr one_lo = strict_float((f.c(1.0) - one_hi) + e.r_hi);
            return Parts{one_hi, one_lo + (e.r_lo + r * r * tail(r)), e.k};
          },
          [=](const Expr &x, const Parts &parts) {
            Expr core = parts[0] + parts[1], k = parts[2];
            Expr k1 = k / 2;  // both factors are normal, the first product is exact
            Expr y = core * f.pow2(k1) * f.pow2(k - k1);
            return select(f.is_nan(x), x, y);
          }};
}

// exp(d) in float for d <= 0, as a term of a sum that is at least 1 (logsumexp's terms, shifted by
// their maximum): no special values, and d is clamped to -80 (beside the 1, e^-80 is 2^-115).
// exp(r) = 1 + r + r^2 P(r) by Horner (FMA where the target has it), 2^k added to the exponent
// bits. Only k's computation is strict (Halide's simplifier and fast-math flags would cancel the
// shifter). Relative error: 2^-23.5 for d > -1, growing with |k| to 2^-21.8 at d = -80 (all
// 1.1e9 floats in [-80, 0] checked against double).
Expr exp_nonpositive(const Expr &d) {
  const Format &f = kSingle;
  Expr dc = max(d, f.c(-80.0));
  Expr shifter = f.c(std::ldexp(1.5, f.mantissa));
  Expr shifted = strict_float(dc * f.c(kInvLn2) + shifter);  // its low bits are k
  // k from the bits, not as shifted - shifter: LLVM would distribute that difference into the
  // product below (kd ln2 = shifted ln2 - shifter ln2), which is exact only by luck.
  Expr kd = cast(f.t, f.bits(shifted) - f.bits(shifter));
  // One FMA with ln 2 rounded to float: its error, |k| 2^-28 relative, only matters for the terms
  // near 1 (small k).
  Expr r = dc - kd * f.c(kLn2Hi + kLn2Lo);
  std::vector<double> p = {1.0, 1.0};
  for (float c : coefficients::f32_arithmetic::exp_tail) p.push_back(c);
  return f.value(f.bits(horner(r, p)) + (f.bits(shifted) << f.mantissa));
}

// exp(x - m) in float for x <= m, as a term of a sum that is at least 1 whose terms all share the
// shift m (logsumexp along a row): exp_nonpositive of the rounded difference s, times 1 + e, where
// e is s's rounding error (an exact two-sum). The rounding alone gives a term |x - m| 2^-24 of
// relative error, the same for every equal x, which rows of many terms far below their maximum
// turned into up to 3.8 times the contract's error (131071 terms 8.5 below it). Where s is below
// exp_nonpositive's clamp (or -inf), e is left out.
Expr exp_of_difference(const Expr &x, const Expr &m) {
  Expr s = strict_float(x - m);
  Expr x_part = strict_float(s + m), m_part = strict_float(s - x_part);
  Expr e = strict_float((x - x_part) - (m + m_part));
  Expr t = exp_nonpositive(min(s, Expr(0.0f)));
  return t + t * select(s > Expr(-80.0f), e, Expr(0.0f));
}

// exp(-d) in double for d >= 0, to 2^-49 relative: the factor that float32 logsumexp's fold rescales
// its double sums by, whose error only has to vanish beside float32's over as many folds as a column
// has chunks. Cheaper than exp_double (the fold took a sixth of W2 axis 0's time with it): a shorter
// polynomial by Estrin's scheme (once per chunk its latency is not hidden), no exact 1 + r, no
// special values, one 2^k. d is clamped to 708, where 2^k is still normal and the factor, below
// 2^-1021, is nothing beside the sum of at least 1 it is added to.
Expr exp_neg_for_fold(const Expr &d) {
  const Format &f = kDouble;
  ExpReduction e(Expr(0.0) - d, f, -708.0, 0.0);
  // r explicitly strict: Halide 14's CSE hoists a subexpression used several times (r, in Estrin's
  // scheme) into a let outside the strict_float() around its uses, where LLVM reassociates it.
  Expr r = strict_float(e.r_hi + e.r_lo);
  Expr p = f.c(1.0) + r + r * r * estrin(r, list(coefficients::f64::exp_tail_fold));
  return strict_float(p * f.pow2(e.k));
}

// exp(d) in double for d <= 0, as a term of a sum that is at least 1 (float64 logsumexp's terms):
// exp_double's reduction and polynomial (by Estrin's scheme) without its exact 1 + r and its
// special values, 2^k added to the exponent bits: about 1 ULP (exp_double's exact steps made
// float64 logsumexp 1.5x slower). d is clamped to -708, where 2^k is still normal and the term,
// below 2^-1021, is nothing beside the sum.
Expr exp_nonpositive_double(const Expr &d) {
  const Format &f = kDouble;
  ExpReduction e(d, f, -708.0, 0.0);
  Expr r = strict_float(e.r_hi + e.r_lo);  // strict for the reason exp_neg_for_fold's is
  Expr p = f.c(1.0) + (r + r * r * estrin(r, f64_coefficients().exp_tail));
  return f.value(f.bits(p) + (e.k << f.mantissa));
}

// float64's degree-10 P by Estrin's scheme: AVX2's 16 registers leave no room to interleave vectors
// and hide Horner's chain (W2 exp float64 1.12x faster on Zen 3); float32's degree 5 as fast either way.
Split exp_double() {
  return exp_split(kDouble, [](const Expr &r) { return estrin(r, f64_coefficients().exp_tail); });
}
Split exp_single() {
  return exp_split(kSingle, [](const Expr &r) { return horner(r, list(coefficients::f32_arithmetic::exp_tail)); });
}

// log of a double, as fdlibm arranges it: x = 2^k m, m in [sqrt(1/2), sqrt(2)), f = m - 1,
// s = f / (2 + f), log(1 + f) = f - f^2/2 + s (f^2/2 + s^2 Q(s^2)), the last term fast.
struct LogDoubleReduction {
  Expr kd, f;
  explicit LogDoubleReduction(const Expr &x) {
    Expr tiny = x < Expr(0x1p-1022);  // denormals: scale into the normal range first
    Expr xs = select(tiny, x * Expr(0x1p54), x);
    Expr bits = bits_of(xs);
    Expr k = cast<int>(bits >> 52) - select(tiny, 1023 + 54, 1023);
    Expr m = from_bits((bits & Expr(std::int64_t(0x000fffffffffffff))) | Expr(std::int64_t(0x3ff0000000000000)));
    Expr high = m > Expr(kSqrt2);
    m = select(high, m * Expr(0.5), m);
    kd = cast<double>(select(high, k + 1, k));
    f = m - Expr(1.0);
  }
};

Split log_double() {
  // Parts: f, k, and s (f^2/2 + s^2 Q(s^2)).
  return {[](const Expr &x) {
            LogDoubleReduction l(x);
            Expr f = strict_float(l.f);
            Expr s = strict_float(f / (Expr(2.0) + f));
            Expr z = s * s;
            return Parts{f, l.kd, s * (Expr(0.5) * f * f + z * horner(z, f64_coefficients().log_tail))};
          },
          [](const Expr &x, const Parts &parts) {
            Expr f = parts[0], kd = parts[1], tail = parts[2];
            Expr half_f2 = Expr(0.5) * f * f;
            Expr y = kd * Expr(kLn2Hi) - ((half_f2 - (tail + kd * Expr(kLn2Lo))) - f);
            return select(is_nan_bits(x) || x < Expr(0.0), Expr(kNaN), x == Expr(0.0), Expr(-kInf), is_inf_bits(x), x,
                          y);
          }};
}

// log of a float in float arithmetic (16 lanes per AVX-512 vector), arranged as fdlibm's: x = 2^k m
// with m in [sqrt(1/2), sqrt(2)) taken from the bits offset by those of sqrt(1/2), f = m - 1
// (exact), log(1 + f) = f - f^2/2 + f^3 T(f) (the last term fast), and k ln2 in two parts
// (k ln2_hi exact) added last: where that last step is not exact the result is large beside its
// other part. Denormals are scaled into the normal range first.
struct LogSingleReduction {
  Expr dk, f;
  explicit LogSingleReduction(const Expr &x) {
    const Format &s = kSingle;
    Expr tiny = x < s.c(0x1p-126);
    Expr xs = select(tiny, x * s.c(0x1p25), x);
    const std::int32_t sqrt_half = 0x3f3504f3;  // bits of sqrt(1/2) rounded down
    Expr offset = s.bits(xs) - Expr(sqrt_half);
    Expr k = (offset >> 23) - select(tiny, Expr(25), Expr(0));
    Expr m = s.value((offset & Expr(0x007fffff)) + Expr(sqrt_half));
    dk = cast(s.t, k);
    f = m - s.c(1.0);
  }
};

Split log_single() {
  // Parts: f, k, and f^3 T(f).
  return {[](const Expr &x) {
            LogSingleReduction l(x);
            Expr f = strict_float(l.f);
            return Parts{f, l.dk, f * f * f * horner(f, list(coefficients::f32_arithmetic::log1p_tail))};
          },
          [](const Expr &x, const Parts &parts) {
            const Format &s = kSingle;
            Expr f = parts[0], dk = parts[1], tail = parts[2];
            Expr half_f2 = s.c(0.5) * f * f;
            Expr y = dk * s.c(s.ln2_hi) - ((half_f2 - (tail + dk * s.c(s.ln2_lo))) - f);
            Expr nan = s.value(Expr(0x7fc00000)), minus_inf = s.value(Expr(std::int32_t(0xff800000)));
            return select(s.is_nan(x) || x < s.c(0.0), nan, x == s.c(0.0), minus_inf, s.bits(x) == Expr(0x7f800000), x,
                          y);
          }};
}

// erf of a double. |x| < b0 = 1: x + x E(x^2). Up to the last break: 1 - exp(-x^2) erfcx(x), with x^2
// as an exact head (x's top 26 bits squared) plus a tail, and erfcx a polynomial per interval.
// Beyond: 1. The sign is copied from x (erf(-0) = -0). Fast: x E(x^2) or erfcx(x), and the parts of
// exp(-head^2) (its polynomial contracts into FMA as the elementwise exp's does).
struct ErfSquare {
  Expr a, head, sq_hi;  // |x|, its top 26 bits, head^2 (exact)
  explicit ErfSquare(const Expr &x)
      : a(abs(x)), head(from_bits(bits_of(a) & Expr(~std::int64_t((1 << 27) - 1)))), sq_hi(head * head) {}
};

// |x| < 1 (NaN is not): x E(x^2) is all the fast parts erf needs there, a fifth of the work of the
// rest (the intervals' polynomials and exp(-x^2)).
Expr erf_double_small(const Expr &a) { return a < Expr(f64_coefficients().erfc_breaks.front()); }
Expr erf_double_small_tail(const Expr &a) { return a * horner(a * a, f64_coefficients().erf_small); }

Split erf_double() {
  Split split;
  split.fast = [](const Expr &x) {
    const Coefficients &c = f64_coefficients();
    ErfSquare s(x);
    const Expr &a = s.a;
    // Coefficient j of the interval a lies in (intervals are tried in order).
    const auto &breaks = c.erfc_breaks;
    auto pick = [&](auto value_of) {
      Expr e = Expr(double(value_of(c.erfcx.size() - 1)));
      for (std::size_t p = c.erfcx.size() - 1; p-- > 0;)
        e = select(a < Expr(breaks[p + 1]), Expr(double(value_of(p))), e);
      return e;
    };
    std::size_t degree = 0;
    for (const auto &p : c.erfcx) degree = std::max(degree, p.size());
    Expr u = a - pick([&](std::size_t p) { return c.erfc_centers[p]; });
    std::vector<Expr> erfcx;  // shorter polynomials are padded with zeros
    for (std::size_t j = 0; j < degree; j++)
      erfcx.push_back(pick([&](std::size_t p) { return j < c.erfcx[p].size() ? c.erfcx[p][j] : 0.0; }));
    Parts parts{select(erf_double_small(a), erf_double_small_tail(a), estrin(u, std::move(erfcx)))};
    for (const Expr &e : exp_double().fast(Expr(0.0) - s.sq_hi)) parts.push_back(e);
    return parts;
  };
  split.finish = [](const Expr &x, const Parts &parts) {
    const Expr &tail = parts[0];
    const Coefficients &c = f64_coefficients();
    ErfSquare s(x);
    Expr sq_lo = (s.a - s.head) * (s.a + s.head);
    Expr exp_sq = exp_double().finish(Expr(0.0) - s.sq_hi, Parts(parts.begin() + 1, parts.end()));
    Expr gauss = exp_sq * (Expr(1.0) - sq_lo * (Expr(1.0) - Expr(0.5) * sq_lo));
    Expr magnitude = select(erf_double_small(s.a), s.a + tail, s.a < Expr(c.erfc_breaks.back()),
                            Expr(1.0) - gauss * tail, Expr(1.0));
    Expr y = from_bits(bits_of(magnitude) | (bits_of(x) & Expr(kSignBit)));
    return select(is_nan_bits(x), x, y);
  };
  split.cheap = [](const Expr &x) { return erf_double_small(abs(x)); };
  split.cheap_fast = [](const Expr &x) { return Parts{erf_double_small_tail(abs(x))}; };
  return split;
}

// erf of a float in float arithmetic, without branches or exp: |x| < 1: x + x E(x^2); up to 3.95
// (where erf rounds to 1): 1 - C(|x| - c), C a polynomial for erfc itself (its absolute error is
// what the result needs); beyond: 1. The sign is copied from x. Fast: x E(x^2) or C(|x| - c), C by
// Estrin's scheme.
Split erf_single() {
  namespace c = coefficients::f32_arithmetic;
  const Format &f = kSingle;
  return {[=](const Expr &x) {
            Expr a = abs(x);
            return Parts{select(a < f.c(c::erf_small_below), a * horner(a * a, list(c::erf_small)),
                                estrin(a - f.c(c::erfc_large_center), list(c::erfc_large)))};
          },
          [=](const Expr &x, const Parts &parts) {
            const Expr &tail = parts[0];
            Expr a = abs(x);
            Expr magnitude =
                select(a < f.c(c::erf_small_below), a + tail, a < f.c(c::erf_one_from), f.c(1.0) - tail, f.c(1.0));
            Expr sign = f.bits(x) & Expr(std::int32_t(0x80000000));
            return select(f.is_nan(x), x, f.value(f.bits(magnitude) | sign));
          }};
}

// The split of fn for x's type: float32 in float lanes.
Split split(MathFunction fn, Type t) {
  if (t != Float(32) && t != Float(64)) throw CompileError("hpipe transcendentals take float or double");
  const bool single = t == Float(32);
  switch (fn) {
    case MathFunction::exp: return single ? exp_single() : exp_double();
    case MathFunction::log: return single ? log_single() : log_double();
    case MathFunction::erf: return single ? erf_single() : erf_double();
  }
  throw CompileError("unknown MathFunction");
}

// The Exprs of a Func's values at `ref` (one, or a Tuple's).
Parts values_at(const Func &f, const FuncRef &ref) {
  if (f.outputs() == 1) return {Expr(ref)};
  Parts parts;
  for (int j = 0; j < f.outputs(); j++) parts.push_back(ref[j]);
  return parts;
}

}  // namespace

Elementwise elementwise(Func x, Expr n, MathFunction fn, int group_lanes) {
  Var i("i");
  const Split f = split(fn, value_type(x));
  Elementwise op;
  op.fast_parts = Func("fast_parts");
  op.y = Func("y");
  if (!f.cheap || group_lanes == 0) {
    op.fast_parts(i) = Tuple(f.fast(x(i)));
    op.y(i) = strict_float(f.finish(x(i), values_at(op.fast_parts, op.fast_parts(i))));
    return op;
  }
  // Grouped: the last group repeats the last element where n is not a multiple of the group.
  op.group_lanes = group_lanes;
  Var lane("lane"), group("group");
  auto x_at = [&](const Expr &l, const Expr &g) { return x(min(g * group_lanes + l, n - 1)); };
  op.needs_full = Func("needs_full");
  op.flag_lanes = RDom(0, group_lanes, "flag_lane");
  op.needs_full(group) = cast<std::uint8_t>(0);
  op.needs_full(group) = max(op.needs_full(group), cast<std::uint8_t>(!f.cheap(x_at(op.flag_lanes, group))));
  // The cheap parts, the rest of the full form's parts 0; then the full parts.
  op.full_lanes = RDom(0, group_lanes, "full_lane");
  op.full_lanes.where(op.needs_full(group) != 0);
  const Parts full = f.fast(x_at(op.full_lanes, group));
  Parts parts = f.cheap_fast(x_at(lane, group));
  for (std::size_t j = parts.size(); j < full.size(); j++) parts.push_back(cast(full[j].type(), 0));
  op.fast_parts(lane, group) = Tuple(parts);
  op.fast_parts(op.full_lanes, group) = Tuple(full);
  op.y(i) = strict_float(f.finish(x(i), values_at(op.fast_parts, op.fast_parts(i % group_lanes, i / group_lanes))));
  return op;
}

// logsumexp's maximum of x (type t) starts at the lowest finite value (the lanes run with LLVM's
// no-infinities flags); beside it goes the largest magnitude's bits (magnitude_bits), an integer
// max that the fast-math flags cannot fold, which tells NaN and +inf apart from finite values.
Tuple lowest_and_no_magnitude(const Type &t) {
  return Tuple(cast(t, Expr(t == Float(32) ? -std::numeric_limits<float>::max() : -std::numeric_limits<double>::max())),
               magnitude_bits(cast(t, 0)));
}

// logsumexp of x (type t) from its shift (the maximum, in double), the sum of exp(x - shift) and
// the largest magnitude's bits, rounded to out_type: NaN anywhere gives NaN, else +inf anywhere
// +inf; the term of the maximum is 1, so a sum below 1/2 is of -inf only (terms e^-80 or less).
Expr settled(const Expr &shift, const Expr &sum, const Expr &largest_magnitude, const Type &t, const Type &out_type) {
  Expr inf_bits = t == Float(32) ? Expr(std::int32_t(0x7f800000)) : Expr(kInfBits);
  Expr nan = largest_magnitude > inf_bits, plus_inf = bits_of(shift) == Expr(kInfBits);
  return strict_float(cast(out_type, select(nan, Expr(kNaN), plus_inf, Expr(kInf), sum < Expr(0.5), Expr(-kInf),
                                            shift + log_double().fused(sum))));
}

LogSumExp logsumexp(Func x, Internal::Parameter input, Expr rows, LogSumExpChunks chunking, Type out_type,
                    LogSumExpReads reads) {
  Var i("i"), c("c"), o("o");
  const Type t = value_type(x);
  LogSumExp op;
  op.reads = reads;
  op.input = std::move(input);
  const int rows_per_chunk = chunking.rows;
  if (rows_per_chunk % 2 != 0) throw CompileError("logsumexp: chunking.rows must be even (float32 sums pairs of rows)");
  // No predicates on the chunk's rows (a branch per row, and the partial results kept in memory
  // across them: float32 logsumexp ran 1.35x slower with them): rows past the end read the last row
  // again, which leaves a maximum as it is, and the sums give them no weight.
  // Fewer rows than whole_from: one chunk of just those rows (a whole chunk would compute terms
  // for the rows past the end, most of its terms for the few rows of the short rows' transposes).
  Expr chunk_extent = rows_per_chunk;
  if (chunking.whole_from > 0) {
    op.whole_chunks = rows >= chunking.whole_from;
    // rows below whole_from, else rows_per_chunk, as a min that the simplifier resolves under the
    // schedule's specialization on whole_chunks (a select, or mins in a sum, it left as they were).
    chunk_extent = min(rows + rows / chunking.whole_from * rows_per_chunk, rows_per_chunk);
  }
  op.chunk_rows = RDom(0, chunk_extent, "chunk_row");
  // likely(): Halide splits the chunk loop into the chunks that need no clamp and the last one.
  auto in_range = [&](const Expr &e) { return reads == LogSumExpReads::column_blocks ? likely(e) : e; };
  auto row_in = [&](const Expr &row) { return min(in_range(row), rows - 1); };
  Expr row = c * rows_per_chunk + op.chunk_rows;
  op.chunks = RDom(0, (rows + rows_per_chunk - 1) / rows_per_chunk, "chunk");

  op.chunk_max = Func("chunk_max");
  op.chunk_sum = Func("chunk_sum");
  Expr x_row = x(i, row_in(row), o);
  const bool single = t == Float(32);
  op.chunk_max(i, c, o) = lowest_and_no_magnitude(t);
  op.chunk_max(i, c, o) =
      Tuple(max(op.chunk_max(i, c, o)[0], x_row), max(op.chunk_max(i, c, o)[1], magnitude_bits(x_row)));
  Expr m = op.chunk_max(i, c, o)[0], flags = op.chunk_max(i, c, o)[1];
  // A row past the end has its exponent lowered by a min with a scalar, so that its term is
  // nothing beside the chunk's sum of at least 1.
  auto term = [&](const Expr &row, const Expr &lowered) {
    Expr d = min(x(i, row_in(row), o) - m, select(in_range(row < rows), cast(t, 0), lowered));
    return single ? exp_nonpositive(d) : exp_nonpositive_double(d);
  };
  op.chunk_sum(i, c, o) = Expr(0.0);
  if (single) {
    // float32: the terms exp(x - max) in float lanes (16 per AVX-512 vector), summed in double by
    // pairs: two rows' terms are added in float before the sum in double (the conversions to
    // double are the costliest part of a term on AVX2 CPUs, docs/performance-notes.md); the pair's
    // rounding, 2^-24 relative, adds to the terms' own error (the contract's 2^-23 absolute). Rows
    // past the end: terms of e^-80.
    op.chunk_terms = RDom(0, (chunk_extent + 1) / 2, "chunk_pair");
    Expr first = c * rows_per_chunk + 2 * op.chunk_terms;
    op.chunk_sum(i, c, o) += cast<double>(term(first, Expr(-100.0f)) + term(first + 1, Expr(-100.0f)));
  } else {
    // float64: a row at a time, each term and its addition strict: with LLVM's fast-math flags
    // the vector loop's body and its guarded tail computed them differently (reassociated), so that
    // a column's bits depended on its place (on SSE4.1, and the sum with AVX-512). Rows past the
    // end: terms of 2^-1021.
    op.chunk_terms = RDom(0, chunk_extent, "chunk_row_term");
    op.chunk_sum(i, c, o) =
        strict_float(op.chunk_sum(i, c, o) + term(c * rows_per_chunk + op.chunk_terms, Expr(-1000.0)));
  }
  // A chunk's (shift, sum) for the fold below, as doubles, and its largest magnitude's bits.
  op.chunk = Func("chunk");
  op.chunk(i, c, o) = Tuple(cast<double>(m), op.chunk_sum(i, c, o), flags);

  // Fold chunk (shift_c, sum_c) into the running (shift, sum): the sum with the smaller shift is
  // rescaled by exp(-|shift - shift_c|) (one exp per fold; for float32 sums exp_neg_for_fold's).
  // NaN and infinities are settled at the end, from the largest magnitude's bits and the running
  // maximum; meanwhile they make the running values whatever they make them.
  op.running = Func("running");
  op.running(i, o) = Tuple(Expr(-std::numeric_limits<double>::max()), Expr(0.0), magnitude_bits(cast(t, 0)));
  Expr old_shift = op.running(i, o)[0], old_sum = op.running(i, o)[1], old_flags = op.running(i, o)[2];
  Expr chunk_shift = op.chunk(i, op.chunks, o)[0], chunk_sum = op.chunk(i, op.chunks, o)[1],
       chunk_flags = op.chunk(i, op.chunks, o)[2];
  Expr chunk_leads = chunk_shift > old_shift, gap = abs(chunk_shift - old_shift);
  Expr scale = t == Float(32) ? exp_neg_for_fold(gap) : exp_double().fused(Expr(0.0) - gap);
  Expr kept = select(chunk_leads, chunk_sum, old_sum), scaled = select(chunk_leads, old_sum, chunk_sum);
  op.running(i, o) =
      Tuple(max(old_shift, chunk_shift), strict_float(kept + scaled * scale), max(old_flags, chunk_flags));

  op.out = Func("out");
  op.out(i, o) = settled(op.running(i, o)[0], op.running(i, o)[1], op.running(i, o)[2], t, out_type);
  return op;
}

LogSumExpRows logsumexp_rows(Func x, Expr n, int block, Type out_type) {
  Var lane("lane"), r("r");
  const Type t = value_type(x);
  const bool single = t == Float(32);
  LogSumExpRows op;
  op.block = block;
  op.n = n;
  // A row is n / block whole blocks and, where n is not a multiple of `block`, a tail block that
  // ends at the row's end, so that every load is a whole vector; the tail block's lanes that the
  // whole blocks counted count in the maximum as they are and are left out of the sum.
  Expr whole = n / block;
  auto first_of = [&](const Expr &b) { return min(b * block, n - block); };
  op.blocks = RDom(0, (n + block - 1) / block, "block");
  op.lane_max = Func("lane_max");
  op.lane_max(lane, r) = lowest_and_no_magnitude(t);
  Expr xb = x(first_of(op.blocks) + lane, r);
  op.lane_max(lane, r) = Tuple(max(op.lane_max(lane, r)[0], xb), max(op.lane_max(lane, r)[1], magnitude_bits(xb)));
  op.lanes = RDom(0, block, "lane_of_row");
  op.row_max = Func("row_max");
  op.row_max(r) = lowest_and_no_magnitude(t);
  op.row_max(r) =
      Tuple(max(op.row_max(r)[0], op.lane_max(op.lanes, r)[0]), max(op.row_max(r)[1], op.lane_max(op.lanes, r)[1]));
  Expr m = op.row_max(r)[0];
  auto exp_of_shifted = [&](const Expr &element) {
    return single ? exp_of_difference(x(element, r), m) : exp_nonpositive_double(min(x(element, r) - m, Expr(0.0)));
  };
  auto whole_term = [&](const Expr &b) { return exp_of_shifted(b * block + lane); };
  // float32: as the column kernel's terms, two blocks' terms added in float, then summed in double;
  // float64: a block at a time, strict.
  auto add = [&](const Expr &terms) {
    Expr sum = op.lane_sum(lane, r);
    return single ? sum + cast<double>(terms) : strict_float(sum + terms);
  };
  op.lane_sum = Func("lane_sum");
  op.lane_sum(lane, r) = Expr(0.0);
  if (single) {
    op.whole_blocks = RDom(0, whole / 2, "block_pair");
    op.lane_sum(lane, r) = add(whole_term(2 * op.whole_blocks) + whole_term(2 * op.whole_blocks + 1));
    op.odd_block = RDom(0, 1, "odd_block");
    op.odd_block.where(whole % 2 == 1);
    op.lane_sum(lane, r) = add(whole_term(whole - 1 + op.odd_block));
  } else {
    op.whole_blocks = RDom(0, whole, "whole_block");
    op.lane_sum(lane, r) = add(whole_term(op.whole_blocks));
  }
  op.tail_block = RDom(0, 1, "tail_block");
  op.tail_block.where(n % block != 0);
  Expr tail_element = n - block + op.tail_block + lane;
  op.lane_sum(lane, r) = add(select(tail_element >= whole * block, exp_of_shifted(tail_element), cast(t, 0)));
  op.row_sum = Func("row_sum");
  op.row_sum(r) = Expr(0.0);
  op.row_sum(r) += op.lane_sum(op.lanes, r);
  op.out = Func("out");
  op.out(r) = settled(cast<double>(m), op.row_sum(r), op.row_max(r)[1], t, out_type);
  return op;
}

}  // namespace hpipe::alg
