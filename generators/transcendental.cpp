#include "generators/transcendental.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "generators/transcendental_coefficients.h"

namespace hpipe::alg {

using namespace Halide;

namespace {

// The polynomials for one result type (tools/dev/fit_transcendental.py fits both sets).
struct Coefficients {
  // float64 results: strict_float (no reassociation or contraction, bit-identical on every
  // target), an exact 1 + r and 2^k in two steps for the denormals. float32 results only need
  // 2^-31 before their rounding: contraction into FMA is allowed and 2^k is one saturating step.
  bool exact;
  std::vector<double> exp_tail, log_tail, erf_small;
  std::vector<std::vector<double>> erfcx;  // one polynomial in x - center per interval
  std::vector<double> erfc_breaks;         // interval ends: erf(x) = x + x E(x^2) below the
                                           // first, 1 from the last (erf rounds to 1 there)
  std::vector<double> erfc_centers;
};

template <class T, std::size_t N>
std::vector<double> list(const T (&c)[N]) {
  return std::vector<double>(c, c + N);
}

const Coefficients &coefficients_for(const Type &result) {
  namespace f32 = coefficients::f32;
  namespace f64 = coefficients::f64;
  static const Coefficients single{false,
                                   list(f32::exp_tail),
                                   list(f32::log_tail),
                                   list(f32::erf_small),
                                   {list(f32::erfcx_0), list(f32::erfcx_1)},
                                   list(f32::erfc_breaks),
                                   list(f32::erfc_centers)};
  static const Coefficients twice{true,
                                  list(f64::exp_tail),
                                  list(f64::log_tail),
                                  list(f64::erf_small),
                                  {list(f64::erfcx_0), list(f64::erfcx_1), list(f64::erfcx_2), list(f64::erfcx_3),
                                   list(f64::erfcx_4)},
                                  list(f64::erfc_breaks),
                                  list(f64::erfc_centers)};
  return result.bits() == 32 ? single : twice;
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
Expr magnitude_bits(const Expr &d) { return bits_of(d) & Expr(std::int64_t(0x7fffffffffffffff)); }
constexpr std::int64_t kInfBits = 0x7ff0000000000000;
Expr is_nan_bits(const Expr &d) { return magnitude_bits(d) > Expr(kInfBits); }
Expr is_inf_bits(const Expr &d) { return magnitude_bits(d) == Expr(kInfBits); }
Expr is_finite_bits(const Expr &d) { return magnitude_bits(d) < Expr(kInfBits); }

Expr horner(const Expr &t, const std::vector<double> &c) {
  Expr acc = Expr(c.back());
  for (std::size_t j = c.size() - 1; j-- > 0;) acc = acc * t + Expr(c[j]);
  return acc;
}

// A binary floating-point format, for the exp that runs in either: float64 results in double,
// float32 elementwise results in float (16 lanes per AVX-512 vector instead of 8).
struct Format {
  Type t, i;                  // the float type and the integer type of its bits
  int mantissa;               // 52 or 23
  std::int64_t bias;          // 1023 or 127
  double limit;               // |x| clamped to this: beyond it exp() is 0 or inf whatever k
  double ln2_hi, ln2_lo;      // ln 2 = ln2_hi + ln2_lo; k * ln2_hi is exact for every k used
  std::int64_t inf_bits;      // bits of +inf
  Expr c(double v) const { return cast(t, Expr(v)); }
  Expr n(std::int64_t v) const { return cast(i, Expr(v)); }
  Expr bits(const Expr &v) const { return reinterpret(i, v); }
  Expr value(const Expr &b) const { return reinterpret(t, b); }
  Expr pow2(const Expr &k) const { return value((k + n(bias)) << mantissa); }  // normal 2^k
  Expr is_nan(const Expr &v) const { return (bits(v) & n((std::int64_t(1) << (i.bits() - 1)) - 1)) > n(inf_bits); }
};
const Format kDouble{Float(64), Int(64), 52, 1023, 800.0, kLn2Hi, kLn2Lo, kInfBits};
// ln 2 to 15 bits (k * ln2_hi is exact for |k| < 2^9; |k| <= 159 here) and the rest in float.
const Format kSingle{Float(32), Int(32), 23, 127, 110.0, 0x1.62e4p-1, 0x1.7f7d1cp-20, 0x7f800000};

// exp in format f, under strict_float; NaN propagates, overflow gives +inf, underflow 0.
// x = k ln2 + r, |r| <= ln2/2 (k by adding and subtracting 1.5 2^mantissa: one instruction fewer
// than round() and no split of 16-lane vectors), r = r_hi + r_lo with r_hi exact; exp(r) =
// 1 + r + r^2 P(r) with 1 + r_hi kept as an exact two-term sum, and 2^k applied in two
// exact-or-once steps (denormal results round once).
Expr exp_exact(const Expr &x, const Format &f, const std::vector<double> &p) {
  Expr xc = clamp(x, f.c(-f.limit), f.c(f.limit));
  Expr shifter = f.c(std::ldexp(1.5, f.mantissa));
  // Explicitly strict: Halide's simplifier would otherwise cancel the shifter before lowering.
  Expr kd = strict_float((xc * f.c(kInvLn2) + shifter) - shifter);
  Expr k = cast(f.i, kd);
  Expr r_hi = xc - kd * f.c(f.ln2_hi);  // exact
  Expr r_lo = f.c(0.0) - kd * f.c(f.ln2_lo);
  Expr r = r_hi + r_lo;
  Expr poly = f.c(p.back());
  for (std::size_t j = p.size() - 1; j-- > 0;) poly = poly * r + f.c(p[j]);
  Expr tail = r * r * poly;
  Expr one_hi = f.c(1.0) + r_hi;
  Expr one_lo = (f.c(1.0) - one_hi) + r_hi;
  Expr core = one_hi + (one_lo + (r_lo + tail));
  Expr k1 = k / 2;  // both factors are normal, the first product is exact
  Expr y = core * f.pow2(k1) * f.pow2(k - k1);
  return select(f.is_nan(x), x, y);
}

// exp(d) in float for d <= 0, as a term of a sum that is at least 1 (logsumexp's terms, shifted by
// their maximum): no special values, and d is clamped to -80 (beside the 1, e^-80 is 2^-115). exp(r) = 1 + r + r^2 P(r) by Horner (FMA where the target has it), 2^k added to the
// exponent bits. Only k's computation is strict (Halide's simplifier and fast-math flags would
// cancel the shifter).
// Each term is within about 1 ULP of float (2^-23 relative).
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
  Expr poly = f.c(p.back());
  for (std::size_t j = p.size() - 1; j-- > 0;) poly = poly * r + f.c(p[j]);
  return f.value(f.bits(poly) + (f.bits(shifted) << f.mantissa));
}

// exp of a double with the coefficients of a result type: float64 as exp_exact; for float32
// results (2^-31 is enough, FMA contraction allowed) one saturating step for 2^k.
Expr exp_double(const Expr &x, const Coefficients &c) {
  if (c.exact) return exp_exact(x, kDouble, c.exp_tail);
  Expr xc = clamp(x, Expr(-800.0), Expr(800.0));
  Expr kd = round(xc * Expr(kInvLn2));
  Expr k = cast<std::int64_t>(kd);
  Expr r = (xc - kd * Expr(kLn2Hi)) - kd * Expr(kLn2Lo);
  Expr tail = r * r * horner(r, c.exp_tail);
  // 2^k saturates to 0 below 2^-1022 (beyond float32's range). Above 2^1023 the result is
  // +inf, chosen on the bits: LLVM may rewrite (1 + s) * inf as s * inf + inf, which is NaN.
  Expr scale = from_bits(clamp(k + Expr(std::int64_t(1023)), Expr(std::int64_t(0)), Expr(std::int64_t(2046))) << 52);
  Expr y = from_bits(select(k > Expr(std::int64_t(1023)), Expr(kInfBits), bits_of((Expr(1.0) + (r + tail)) * scale)));
  return select(is_nan_bits(x), x, y);
}

// log of a double, as fdlibm arranges it: x = 2^k m, m in [sqrt(1/2), sqrt(2)), f = m - 1,
// s = f / (2 + f), log(1 + f) = f - f^2/2 + s (f^2/2 + s^2 Q(s^2)).
Expr log_double(const Expr &x, const Coefficients &c) {
  Expr tiny = x < Expr(0x1p-1022);  // denormals: scale into the normal range first
  Expr xs = select(tiny, x * Expr(0x1p54), x);
  Expr bits = bits_of(xs);
  Expr k = cast<int>(bits >> 52) - select(tiny, 1023 + 54, 1023);
  Expr m = from_bits((bits & Expr(std::int64_t(0x000fffffffffffff))) | Expr(std::int64_t(0x3ff0000000000000)));
  Expr high = m > Expr(kSqrt2);
  m = select(high, m * Expr(0.5), m);
  Expr kd = cast<double>(select(high, k + 1, k));
  Expr f = m - Expr(1.0);
  // s only scales the f^3-sized part of the result, so for float32 results a float32 quotient
  // (2^-24) is ample and costs half as much as a double one.
  Expr s = c.exact ? f / (Expr(2.0) + f) : cast<double>(cast<float>(f) / cast<float>(Expr(2.0) + f));
  Expr z = s * s;
  Expr r = z * horner(z, c.log_tail);
  Expr half_f2 = Expr(0.5) * f * f;
  Expr y = kd * Expr(kLn2Hi) - ((half_f2 - (s * (half_f2 + r) + kd * Expr(kLn2Lo))) - f);
  return select(is_nan_bits(x) || x < Expr(0.0), Expr(kNaN), x == Expr(0.0), Expr(-kInf), is_inf_bits(x), x, y);
}

// erf of a double. |x| < b0 = 1: x + x E(x^2). Up to the last break: 1 - exp(-x^2) erfcx(x), with x^2
// as an exact head (x's top 26 bits squared) plus a tail, and erfcx a polynomial per interval.
// Beyond: 1. The sign is copied from x (erf(-0) = -0).
Expr erf_double(const Expr &x, const Coefficients &c) {
  Expr a = abs(x);
  Expr small = a + a * horner(a * a, c.erf_small);

  Expr head = from_bits(bits_of(a) & Expr(~std::int64_t((1 << 27) - 1)));
  Expr sq_hi = head * head;
  Expr sq_lo = (a - head) * (a + head);
  Expr gauss = exp_double(Expr(0.0) - sq_hi, c) * (Expr(1.0) - sq_lo * (Expr(1.0) - Expr(0.5) * sq_lo));
  // Coefficient j of the interval a lies in (intervals are tried in order).
  const auto &breaks = c.erfc_breaks;
  auto pick = [&](auto value_of) {
    Expr e = Expr(double(value_of(c.erfcx.size() - 1)));
    for (std::size_t p = c.erfcx.size() - 1; p-- > 0;) e = select(a < Expr(breaks[p + 1]), Expr(double(value_of(p))), e);
    return e;
  };
  std::size_t degree = 0;
  for (const auto &p : c.erfcx) degree = std::max(degree, p.size());
  Expr u = a - pick([&](std::size_t p) { return c.erfc_centers[p]; });
  auto coefficient = [&](std::size_t j) {  // shorter polynomials are padded with zeros
    return pick([&](std::size_t p) { return j < c.erfcx[p].size() ? c.erfcx[p][j] : 0.0; });
  };
  Expr erfcx = coefficient(degree - 1);
  for (std::size_t j = degree - 1; j-- > 0;) erfcx = erfcx * u + coefficient(j);
  Expr large = Expr(1.0) - gauss * erfcx;

  Expr magnitude = select(a < Expr(breaks.front()), small, a < Expr(breaks.back()), large, Expr(1.0));
  Expr y = from_bits(bits_of(magnitude) | (bits_of(x) & Expr(kSignBit)));
  return select(is_nan_bits(x), x, y);
}

Expr strict_if(const Coefficients &c, const Expr &e) { return c.exact ? strict_float(e) : e; }

// Computes fn in double with the coefficients of x's type, rounds once to x's type.
template <class Fn>
Expr in_double(const Expr &x, Fn fn) {
  if (!x.type().is_float() || (x.type().bits() != 32 && x.type().bits() != 64))
    throw CompileError("hpipe transcendentals take float or double");
  const Coefficients &c = coefficients_for(x.type());
  return strict_if(c, cast(x.type(), fn(cast<double>(x), c)));
}

}  // namespace

Expr accurate_exp(const Expr &x) {
  if (x.type() == Float(32))
    return strict_float(exp_exact(x, kSingle, list(coefficients::f32_arithmetic::exp_tail)));
  return in_double(x, exp_double);
}
Expr accurate_log(const Expr &x) { return in_double(x, log_double); }
Expr accurate_erf(const Expr &x) { return in_double(x, erf_double); }

Elementwise elementwise(Func x, MathFunction fn) {
  Var i("i");
  Elementwise op;
  op.y = Func("y");
  switch (fn) {
    case MathFunction::exp:
      op.y(i) = accurate_exp(x(i));
      break;
    case MathFunction::log:
      op.y(i) = accurate_log(x(i));
      break;
    case MathFunction::erf:
      op.y(i) = accurate_erf(x(i));
      break;
  }
  return op;
}

LogSumExp logsumexp(Func x, Expr rows, int rows_per_chunk) {
  Var i("i"), c("c"), o("o");
  const Type t = value_type(x);
  const Coefficients &k = coefficients_for(t);
  // The fold and the final log run once per chunk or output: they use the float64 set.
  const Coefficients &once = coefficients_for(Float(64));
  LogSumExp op;
  op.chunk_rows = RDom(0, rows_per_chunk, "chunk_row");
  Expr row = c * rows_per_chunk + op.chunk_rows;
  op.chunk_rows.where(row < rows);
  // The predicate skips the rows past the end; the clamp tells bounds inference so.
  Expr row_in = min(row, rows - 1);
  op.chunks = RDom(0, (rows + rows_per_chunk - 1) / rows_per_chunk, "chunk");

  op.chunk_max = Func("chunk_max");
  op.chunk_sum = Func("chunk_sum");
  Expr x_row = x(i, row_in, o);
  // A chunk's (shift, sum) for the fold below, as doubles; NaN and +inf make the sum NaN or +inf.
  Expr chunk_shift, chunk_sum;
  if (t == Float(32)) {
    // float32: the terms exp(x - max) in float lanes (16 per AVX-512 vector) with exp_nonpositive,
    // summed in double. The maximum is a float max started at the lowest finite value (the lanes
    // run with LLVM's no-infinities flags); beside it the largest magnitude's bits, an integer max
    // that the fast-math flags cannot fold, tell NaN and +inf apart from finite chunks.
    Expr magnitude = reinterpret(Int(32), x_row) & Expr(0x7fffffff);
    op.chunk_max(i, c, o) = Tuple(Expr(-std::numeric_limits<float>::max()), Expr(0));
    op.chunk_max(i, c, o) = Tuple(max(op.chunk_max(i, c, o)[0], x_row), max(op.chunk_max(i, c, o)[1], magnitude));
    op.chunk_sum(i, c, o) = Expr(0.0);
    op.chunk_sum(i, c, o) += cast<double>(exp_nonpositive(x_row - op.chunk_max(i, c, o)[0]));
    Expr m = op.chunk_max(i, op.chunks, o)[0], flags = op.chunk_max(i, op.chunks, o)[1];
    const std::int32_t inf = 0x7f800000;
    Expr nan = flags > Expr(inf), plus_inf = reinterpret(Int(32), m) == Expr(inf);
    chunk_shift = select(plus_inf || nan, Expr(0.0), cast<double>(m));
    // The term of the maximum is 1: a sum below 1/2 is a chunk of -inf only (its terms are e^-80).
    Expr sum = op.chunk_sum(i, op.chunks, o);
    chunk_sum = from_bits(select(nan, Expr(std::int64_t(0x7ff8000000000000)), plus_inf, Expr(kInfBits),
                                 sum < Expr(0.5), Expr(std::int64_t(0)), bits_of(sum)));
  } else {
    // float64: strict, each term to the last bit (exp_double); a non-finite maximum (all -inf, a
    // +inf, NaN) shifts by 0 instead, as scipy does, and exp() gives the sum its NaN or inf.
    auto shift = [&](const Expr &chunk) {
      Expr m = op.chunk_max(i, chunk, o);
      return select(is_finite_bits(m), m, Expr(0.0));
    };
    op.chunk_max(i, c, o) = Expr(-std::numeric_limits<double>::max());
    op.chunk_max(i, c, o) = strict_float(max(op.chunk_max(i, c, o), x_row));
    op.chunk_sum(i, c, o) = Expr(0.0);
    op.chunk_sum(i, c, o) += strict_float(exp_double(x_row - shift(c), k));
    chunk_shift = shift(op.chunks);
    chunk_sum = op.chunk_sum(i, op.chunks, o);
  }

  // Fold chunk (shift_c, sum_c) into the running (shift, sum): both rescaled to the larger shift.
  // An infinite sum stays infinite (inf * exp(-huge) would be NaN).
  auto rescale = [&](const Expr &sum, const Expr &by) {
    return select(is_inf_bits(sum), sum, sum * exp_double(by, once));
  };
  op.running = Func("running");
  op.running(i, o) = Tuple(Expr(-std::numeric_limits<double>::max()), Expr(0.0));
  Expr old_shift = op.running(i, o)[0], old_sum = op.running(i, o)[1];
  Expr new_shift = max(old_shift, chunk_shift);
  op.running(i, o) = Tuple(new_shift, strict_if(k, rescale(old_sum, old_shift - new_shift) +
                                                       rescale(chunk_sum, chunk_shift - new_shift)));

  op.out = Func("out");
  op.out(i, o) = strict_if(k, cast(t, op.running(i, o)[0] + log_double(op.running(i, o)[1], once)));
  return op;
}

}  // namespace hpipe::alg
