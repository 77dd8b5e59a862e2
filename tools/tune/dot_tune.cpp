// The batched dot family's entry in the tuner registry: batched_dot (row-major operands) and
// batched_dot_columns (column-major), their cases and tolerance. Algorithms, estimates and knob
// structs are the generators' own (pipelines/dot_generators.cpp).
#include <sstream>

#include "generators/dot.h"
#include "schedules/dot.h"
#include "tests/reference/dot_reference.h"
#include "tools/tune/case_util.h"

namespace hpipe::tune {
namespace {

using namespace Halide;

struct Shape {
  int n, k;
};

// The timing problem first: W1's large batch (4096 x 4096, bandwidth-bound), or W1's own 500 x 500
// (in cache, where the tasks' overhead shows; quick for CI); then shapes around the block (32) and
// chunk (2048) sizes.
std::vector<Shape> shapes(Size size) {
  std::vector<Shape> list{size == Size::workload ? Shape{4096, 4096} : Shape{500, 500}};
  list.insert(list.end(), {{3, 2049}, {5, 33}, {1, 1}, {2, 6171}});
  return list;
}
constexpr int kLongestRow = 6171;

// The float32 bound of tests/test_dot.cpp (hpipe/dot.h) for inputs in [0.05, 1), where
// sum |a b| is the result itself: 67 roundings of 2^-24, plus the long-double reference's own
// (K + 1) 2^-64 at the longest row of the cases (4096 x 4096 included).
const Tolerance kDotBound = tolerance::dot_same_sign<float>(kLongestRow);

std::function<std::vector<Case>(Size, std::uint32_t)> cases(bool columns) {
  return [columns](Size size, std::uint32_t seed) {
    std::vector<Case> list;
    for (const Shape &s : shapes(size)) {
      seed += 10;
      const auto a = random_values(std::int64_t(s.n) * s.k, seed), b = random_values(std::int64_t(s.n) * s.k, seed + 1);
      Case c;
      std::ostringstream shape;
      shape << "N=" << s.n << ",K=" << s.k;
      c.shape = shape.str();
      if (columns) {
        // a(i, k) column-major: the same (N, K) values stored transposed.
        auto transpose = [&](const std::vector<double> &v) {
          std::vector<double> t(v.size());
          for (int i = 0; i < s.n; i++)
            for (int j = 0; j < s.k; j++) t[std::size_t(j) * s.n + i] = v[std::size_t(i) * s.k + j];
          return t;
        };
        c.inputs = {dense("a", {s.n, s.k}, transpose(a)), dense("b", {s.n, s.k}, transpose(b))};
      } else {
        c.inputs = {dense("a", {s.k, s.n}, a), dense("b", {s.k, s.n}, b)};
      }
      c.output_name = "out", c.output_extents = {s.n};
      c.expected = reference::batched_dot(a, b, s.n, s.k).value;
      list.push_back(std::move(c));
    }
    return list;
  };
}

}  // namespace

HPIPE_TUNE_FAMILY(dot) {
  using K = sched::DotKnobs;
  std::function<alg::BatchedDot(Built &)> rows = [](Built &built) {
    const alg::DotEstimates e;
    ImageParam a = buffer_param(built, "a", 2, e.matrix()), b = buffer_param(built, "b", 2, e.matrix());
    auto op = alg::batched_dot(a, b, a.dim(0).extent());
    set_output(built, op.out, e.out());
    return op;
  };
  std::function<alg::BatchedDotColumns(Built &)> columns = [](Built &built) {
    const alg::DotEstimates e;
    ImageParam a = buffer_param(built, "a", 2, e.columns()), b = buffer_param(built, "b", 2, e.columns());
    auto op = alg::batched_dot_columns(a, b, a.dim(1).extent(), a.type());
    set_output(built, op.out, e.out());
    return op;
  };
  return {
      make_op<K, alg::BatchedDot>("batched_dot", rows, cases(false), kDotBound),
      make_op<K, alg::BatchedDotColumns>("batched_dot_columns", columns, cases(true), kDotBound),
  };
}

}  // namespace hpipe::tune
