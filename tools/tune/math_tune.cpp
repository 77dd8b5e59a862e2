// The math family's entry in the tuner registry: math_exp, math_log, math_erf (elementwise)
// and math_logsumexp, their cases and tolerances. The algorithms, estimates, knob structs and the
// chunk size of logsumexp are the generator's own (pipelines/math_generators.cpp).
#include <cmath>
#include <random>
#include <sstream>

#include "generators/math.h"
#include "schedules/math.h"
#include "tests/reference/math_reference.h"
#include "tools/tune/case_util.h"

namespace hpipe::tune {
namespace {

using namespace Halide;
using alg::MathFunction;
using test::reference::Fn;

// The accuracy contract of hpipe/math.h in float32 (the tuner's type), as abs + rel tolerances.
const Tolerance kExpTolerance = tolerance::float32_ulps(tolerance::kUlpContract.exp);
const Tolerance kLogTolerance = tolerance::float32_ulps(tolerance::kUlpContract.log);
const Tolerance kErfTolerance = tolerance::float32_ulps(tolerance::kUlpContract.erf);
// The logsumexp tolerance does not depend on the row length in float32.
const Tolerance kLogSumExpTolerance = tolerance::logsumexp<float>(1);

// n float32 values uniform in [lo, hi), or with their logarithm uniform when `log_uniform`.
std::vector<double> values_in(std::int64_t n, std::uint32_t seed, double lo, double hi, bool log_uniform = false) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(log_uniform ? std::log(lo) : lo, log_uniform ? std::log(hi) : hi);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double &x : v) x = static_cast<float>(log_uniform ? std::exp(dist(rng)) : dist(rng));
  return v;
}

Fn reference_fn(MathFunction fn) {
  return fn == MathFunction::exp ? Fn::exp : fn == MathFunction::log ? Fn::log : Fn::erf;
}

// Elementwise: the timing problem first, W2's distribution (uniform in [0.05, 1)) on 2^24 elements
// (W2 is 10^8; 2^24 float32 are 64 MiB in and out, far past the caches, and keep the double
// reference and the tuner's copies of the data small), or 3 * 2^14 + 5 for CI (a few tasks of the
// least size, 2^14, and a vector tail); then the function's range
// (exp: results normal and finite; log: 2^-30 .. 2^30; erf: up to the +-1 plateau), a problem
// narrower than a vector and a single element.
std::function<std::vector<Case>(Size, std::uint32_t)> elementwise_cases(MathFunction fn) {
  return [fn](Size size, std::uint32_t seed) {
    const double lo = fn == MathFunction::exp ? -87.0 : fn == MathFunction::log ? std::ldexp(1.0, -30) : -5.0;
    const double hi = fn == MathFunction::exp ? 88.0 : fn == MathFunction::log ? std::ldexp(1.0, 30) : 5.0;
    const bool log_uniform = fn == MathFunction::log;
    std::vector<Case> list;
    auto add = [&](int n, std::vector<double> x) {
      Case c;
      c.shape = "N=" + std::to_string(n);
      c.output_name = "y", c.output_extents = {n};
      c.expected.reserve(x.size());
      for (double v : x)
        c.expected.push_back(double(test::reference::exact<float>(reference_fn(fn), static_cast<float>(v))));
      c.inputs = {dense("x", {n}, std::move(x))};
      list.push_back(std::move(c));
    };
    const int timing = size == Size::workload ? 1 << 24 : 3 * (1 << 14) + 5;
    add(timing, random_values(timing, seed += 10));
    for (int n : {1000, 7, 1}) add(n, values_in(n, seed += 10, lo, hi, log_uniform));
    return list;
  };
}

struct Reduction {
  int inner, rows, outer;  // x(i, r, o), Halide order; rows are reduced
  double lo, hi;
};

// logsumexp: the timing problem first, W2's axis-0 reduction (10000 columns, uniform in
// [0.05, 1)) over 2048 rows instead of 10^4 (82 MB of float32), or 1000 columns of 100 rows for CI
// (a partial last chunk); then odd sizes with several chunks and outer slices, a single row
// narrower than a vector, and rows fewer than one chunk, over ranges where the shift matters.
std::vector<Reduction> reductions(Size size) {
  std::vector<Reduction> list{size == Size::workload ? Reduction{10000, 2048, 1, 0.05, 1.0}
                                                     : Reduction{1000, 100, 1, 0.05, 1.0}};
  list.insert(list.end(), {{37, 65, 3, -40.0, 40.0}, {5, 1, 2, -80.0, 80.0}, {3, 31, 1, -1.0, 1.0}});
  return list;
}

std::vector<Case> logsumexp_cases(Size size, std::uint32_t seed) {
  std::vector<Case> list;
  for (const Reduction &p : reductions(size)) {
    const std::int64_t n = std::int64_t(p.inner) * p.rows * p.outer;
    auto x = values_in(n, seed += 10, p.lo, p.hi);
    Case c;
    std::ostringstream shape;
    shape << "inner=" << p.inner << ",rows=" << p.rows << ",outer=" << p.outer;
    c.shape = shape.str();
    c.output_name = "out", c.output_extents = {p.inner, p.outer};
    c.expected = test::reference::logsumexp(x, p.outer, p.rows, p.inner);  // C order (outer, rows, inner)
    c.inputs = {dense("x", {p.inner, p.rows, p.outer}, std::move(x))};
    list.push_back(std::move(c));
  }
  return list;
}

std::function<alg::Elementwise(Built &)> elementwise(MathFunction fn) {
  return [fn](Built &built) {
    const alg::MathEstimates e;
    ImageParam x = buffer_param(built, "x", 1, e.flat());
    auto op = alg::elementwise(x, x.dim(0).extent(), fn, sched::elementwise_group_lanes(built.target, x.type()));
    set_output(built, op.y, e.flat());
    return op;
  };
}

}  // namespace

HPIPE_TUNE_FAMILY(math) {
  using K = sched::MathElementwiseKnobs;
  std::function<alg::LogSumExp(Built &)> logsumexp = [](Built &built) {
    const alg::MathEstimates e;
    ImageParam x = buffer_param(built, "x", 3, e.matrix());
    const auto reads = alg::LogSumExpReads::column_blocks;
    auto op = alg::logsumexp(x, x.parameter(), x.dim(1).extent(),
                             sched::logsumexp_chunks(built.target, x.type(), reads), x.type(), reads);
    set_output(built, op.out, e.reduced());
    return op;
  };
  return {
      make_op<K, alg::Elementwise>("math_exp", elementwise(MathFunction::exp), elementwise_cases(MathFunction::exp),
                                   kExpTolerance),
      make_op<K, alg::Elementwise>("math_log", elementwise(MathFunction::log), elementwise_cases(MathFunction::log),
                                   kLogTolerance),
      make_op<K, alg::Elementwise>("math_erf", elementwise(MathFunction::erf), elementwise_cases(MathFunction::erf),
                                   kErfTolerance),
      make_op<sched::MathLogSumExpKnobs, alg::LogSumExp>("math_logsumexp", logsumexp, logsumexp_cases,
                                                         kLogSumExpTolerance),
  };
}

}  // namespace hpipe::tune
