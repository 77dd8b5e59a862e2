// The reconstruction family's entry in the tuner registry: the TV denoiser and one GAP-TV and one
// ADMM-TV iteration, each per band and vectorial, their cases and tolerances. Algorithms, estimates
// and knob structs are the generators' own (pipelines/recon_generators.cpp).
#include <sstream>

#include "generators/recon.h"
#include "schedules/recon.h"
#include "tests/reference/recon_reference.h"
#include "tools/tune/case_util.h"

namespace hpipe::tune {
namespace {

using namespace Halide;
using alg::CassiGeometry;
using alg::ReconEstimates;
using reference::CassiProblem;

struct Problem {
  CassiProblem p;
  double weight;   // TV weight
  int iterations;  // TV iterations
};

// The timing problem first: one 28-band 256 x 256 scene with 5 TV iterations (the generators'
// estimates), or a small one for CI; then odd sizes, a negative step with per-band masks, the
// dispersion along the height, one TV iteration and more steps than a vector.
std::vector<Problem> problems(Size size) {
  std::vector<Problem> list;
  if (size == Size::workload) {
    list.push_back({{1, 28, 256, 256, 2}, 0.1, 5});
  } else {
    list.push_back({{1, 4, 24, 40, 2}, 0.1, 5});
  }
  list.push_back({{2, 3, 17, 33, -2, false, true}, 0.05, 13});
  list.push_back({{1, 4, 9, 5, 3, true}, 0.2, 1});
  list.push_back({{1, 2, 1, 19, 1}, 0.2, 5});  // H = 1
  return list;
}
constexpr int kMostTvIterations = 13;

// tests/test_recon.cpp's TV tolerance at the most iterations the cases use. The GAP-TV and ADMM-TV
// tests compare whole reconstructions (residuals), so one step of them is held to the same bound,
// its data step being a few roundings of values of order 1 ahead of the TV: measured worst errors
// (default knobs, all cases, W4-sized timing case included) 0.004 of it for tv_chambolle, 0.10
// for gap_tv_step, 0.02 for admm_tv_step; over all 36 variants 0.12 for gap_tv_vectorial_step,
// 0.02 for admm_tv_vectorial_step.
const Tolerance kTvTolerance = tolerance::tv<float>(kMostTvIterations);

std::string describe(const Problem &q) {
  const CassiProblem &p = q.p;
  std::ostringstream s;
  s << "B=" << p.B << ",C=" << p.C << ",H=" << p.H << ",W=" << p.W << ",S=" << p.step
    << ",axis=" << (p.along_height ? "h" : "w") << ",mask=" << (p.per_band_mask ? "per_band" : "shared")
    << ",tv_weight=" << q.weight << ",tv_iterations=" << q.iterations;
  return s.str();
}

enum class Kind { tv, tv_vectorial, gap, gap_vectorial, admm, admm_vectorial };

Case make_case(Kind kind, const Problem &q, std::uint32_t seed) {
  const CassiProblem &p = q.p;
  const int B = int(p.B), C = int(p.C), H = int(p.H), W = int(p.W), Hm = int(p.Hm()), Wm = int(p.Wm());
  const std::vector<int> cube{W, H, C, B}, meas{Wm, Hm, B};
  const auto x = random_values(p.B * p.C * p.H * p.W, seed);
  Case c;
  c.shape = describe(q);
  c.output_extents = cube;
  const bool vectorial = kind == Kind::tv_vectorial || kind == Kind::gap_vectorial || kind == Kind::admm_vectorial;
  if (kind == Kind::tv || kind == Kind::tv_vectorial) {
    // Two strips per image (the runtime cuts the vectorial TV so for two worker threads).
    c.inputs = {dense("image", cube, x), float_arg("weight", q.weight), int_arg("iterations", q.iterations),
                int_arg("strip_rows", (H + 1) / 2)};
    c.output_name = "out";
    c.expected = reference::tv_chambolle(p, x, float(q.weight), q.iterations, vectorial);
    return c;
  }
  const reference::ReconSettings s;  // lambda, gamma, accelerate as the runtime's defaults
  const auto y = random_values(p.B * p.Hm() * p.Wm(), seed + 1);
  const auto mask = random_values((p.per_band_mask ? p.C : 1) * p.H * p.W, seed + 2);
  auto phi = reference::cassi_phi(p, mask);
  for (double &v : phi) v = float(v);                                  // the kernel's input is float32
  const auto second = random_values(p.B * p.C * p.H * p.W, seed + 3);  // b (ADMM)
  const auto y1 = random_values(p.B * p.Hm() * p.Wm(), seed + 4);      // y1 (GAP)
  c.inputs = {
      dense("measurement", meas, y),        {"coded_mask", true, {W, H, C}, {1, W, p.per_band_mask ? W * H : 0}, mask},
      dense("phi", {Wm, Hm}, phi),          int_arg("step", p.step),
      int_arg("axis", p.along_height),      float_arg("lambda", s.lambda),
      float_arg("tv_weight", q.weight),     int_arg("tv_iterations", q.iterations),
      int_arg("tv_strip_rows", (H + 1) / 2)};
  const double lambda = float(s.lambda), weight = float(q.weight), gamma = float(s.gamma);
  if (kind == Kind::gap || kind == Kind::gap_vectorial) {
    // x' = TV(x + lambda A^T((y1' - A x) / Phi)), y1' = y1 + (y - A x); the outputs x', y1'.
    c.inputs.push_back(dense("x_prev", cube, x));
    c.inputs.push_back(dense("y1_prev", meas, y1));
    c.inputs.push_back(int_arg("accelerate", s.accelerate));
    c.output_name = "x_next", c.more_outputs = {meas};
    const auto yb = reference::cassi_forward(p, x, mask);
    std::vector<double> y1_next(y.size()), r(y.size());
    for (std::size_t i = 0; i < y.size(); i++) {
      y1_next[i] = y1[i] + (y[i] - yb[i]);
      r[i] = (s.accelerate ? y1_next[i] : y[i]) - yb[i];
    }
    const auto step = reference::cassi_adjoint(p, reference::divide_by_phi(p, r, phi, 0.0), mask);
    std::vector<double> data(x.size());
    for (std::size_t i = 0; i < x.size(); i++) data[i] = x[i] + lambda * step[i];
    c.expected = reference::tv_chambolle(p, data, weight, q.iterations, vectorial);
    c.expected.insert(c.expected.end(), y1_next.begin(), y1_next.end());
    return c;
  }
  // ADMM: v = theta + b, x = v + lambda A^T((y - A v) / (Phi + gamma)), theta' = TV(x - b),
  // b' = b - (x - theta'); the output is Tuple(theta', b').
  c.inputs.push_back(dense("theta_prev", cube, x));
  c.inputs.push_back(dense("b_prev", cube, second));
  c.inputs.push_back(float_arg("gamma", s.gamma));
  c.output_name = "next", c.output_count = 2;
  std::vector<double> v(x.size());
  for (std::size_t i = 0; i < v.size(); i++) v[i] = x[i] + second[i];
  const auto yb = reference::cassi_forward(p, v, mask);
  std::vector<double> r(y.size());
  for (std::size_t i = 0; i < y.size(); i++) r[i] = y[i] - yb[i];
  const auto step = reference::cassi_adjoint(p, reference::divide_by_phi(p, r, phi, gamma), mask);
  std::vector<double> data(v.size()), x_minus_b(v.size());
  for (std::size_t i = 0; i < v.size(); i++) data[i] = v[i] + lambda * step[i], x_minus_b[i] = data[i] - second[i];
  const auto theta = reference::tv_chambolle(p, x_minus_b, weight, q.iterations, vectorial);
  c.expected = theta;
  for (std::size_t i = 0; i < v.size(); i++) c.expected.push_back(second[i] - (data[i] - theta[i]));
  return c;
}

std::function<std::vector<Case>(Size, std::uint32_t)> cases_of(Kind kind) {
  return [kind](Size size, std::uint32_t seed) {
    std::vector<Case> list;
    for (const auto &q : problems(size)) list.push_back(make_case(kind, q, seed += 10));
    return list;
  };
}

// The inputs every reconstruction step has, named and estimated as in the generators (ReconArgs).
struct ReconParams {
  ImageParam y, mask, phi;
  Param<int> step, axis;
  Param<float> lambda, tv_weight;
  Param<int> tv_iterations, tv_strip_rows;

  explicit ReconParams(Built &built, const ReconEstimates &e)
      : y(buffer_param(built, "measurement", 3, e.cassi.measurement())),
        mask(buffer_param(built, "coded_mask", 3, e.cassi.mask())),
        phi(buffer_param(built, "phi", 2, e.cassi.phi())),
        step(int_param(built, "step", e.cassi.step)),
        axis(int_param(built, "axis", e.cassi.axis)),
        lambda(float_param(built, "lambda", 1)),
        tv_weight(float_param(built, "tv_weight", 0.1f)),
        tv_iterations(int_param(built, "tv_iterations", e.tv_iterations)),
        tv_strip_rows(int_param(built, "tv_strip_rows", e.cassi.height / 2)) {}
  CassiGeometry geometry() const { return alg::mask_geometry(mask, step, axis); }
};

// One GAP-TV / ADMM-TV iteration with the per-band TV or (Vectorial) the vectorial TV in the
// target's form, as the generators build them.
template <bool Vectorial>
auto gap_iteration(Built &built) {
  const ReconEstimates e;
  ReconParams args(built, e);
  ImageParam x = buffer_param(built, "x_prev", 4, e.cassi.cube());
  ImageParam y1 = buffer_param(built, "y1_prev", 3, e.cassi.measurement());
  Param<int> accelerate = int_param(built, "accelerate", 1);
  const alg::BandSumForm form = alg::band_sum_form(built.target);
  auto op = [&] {
    if constexpr (Vectorial) {
      return alg::gap_tv_vectorial_iteration(x, args.y, y1, args.mask, args.phi, args.geometry(), form, args.lambda,
                                             accelerate, args.tv_weight, args.tv_iterations, args.tv_strip_rows,
                                             alg::tv_vectorial_form(built.target));
    } else {
      return alg::gap_tv_iteration(x, args.y, y1, args.mask, args.phi, args.geometry(), form, args.lambda, accelerate,
                                   args.tv_weight, args.tv_iterations, args.tv_strip_rows);
    }
  }();
  set_output(built, op.tv.out, e.cassi.cube());
  op.y1.set_estimates(e.cassi.measurement());
  built.more_outputs.push_back(op.y1);
  return op;
}

template <bool Vectorial>
auto admm_iteration(Built &built) {
  const ReconEstimates e;
  ReconParams args(built, e);
  ImageParam theta = buffer_param(built, "theta_prev", 4, e.cassi.cube());
  ImageParam b = buffer_param(built, "b_prev", 4, e.cassi.cube());
  Param<float> gamma = float_param(built, "gamma", 0.01f);
  const alg::BandSumForm form = alg::band_sum_form(built.target);
  auto op = [&] {
    if constexpr (Vectorial) {
      return alg::admm_tv_vectorial_iteration(theta, b, args.y, args.mask, args.phi, args.geometry(), form, args.lambda,
                                              gamma, args.tv_weight, args.tv_iterations, args.tv_strip_rows,
                                              alg::tv_vectorial_form(built.target));
    } else {
      return alg::admm_tv_iteration(theta, b, args.y, args.mask, args.phi, args.geometry(), form, args.lambda, gamma,
                                    args.tv_weight, args.tv_iterations, args.tv_strip_rows);
    }
  }();
  set_output(built, op.out, e.cassi.cube());
  return op;
}

}  // namespace

HPIPE_TUNE_FAMILY(recon) {
  using K = sched::ReconKnobs;
  std::function<alg::TvChambolle(Built &)> tv = [](Built &built) {
    const ReconEstimates e;
    ImageParam x = buffer_param(built, "image", 4, e.cassi.cube());
    Param<float> weight = float_param(built, "weight", 0.1f);
    Param<int> iterations = int_param(built, "iterations", e.tv_iterations);
    Param<int> strip_rows = int_param(built, "strip_rows", e.cassi.height / 2);
    auto op = alg::tv_chambolle(x, x.dim(0).extent(), x.dim(1).extent(), weight, iterations, strip_rows);
    set_output(built, op.out, e.cassi.cube());
    return op;
  };
  std::function<alg::TvVectorial(Built &)> tv_vectorial = [](Built &built) {
    const ReconEstimates e;
    ImageParam x = buffer_param(built, "image", 4, e.cassi.cube());
    Param<float> weight = float_param(built, "weight", 0.1f);
    Param<int> iterations = int_param(built, "iterations", e.tv_iterations);
    Param<int> strip_rows = int_param(built, "strip_rows", e.cassi.height / 2);
    auto op = alg::tv_vectorial(x, x.dim(0).extent(), x.dim(1).extent(), x.dim(2).extent(), weight, iterations,
                                strip_rows, false, alg::tv_vectorial_form(built.target));
    set_output(built, op.out, e.cassi.cube());
    return op;
  };
  return {
      make_op<K, alg::TvChambolle>("tv_chambolle", tv, cases_of(Kind::tv), kTvTolerance),
      make_op<K, alg::TvVectorial>("tv_vectorial", tv_vectorial, cases_of(Kind::tv_vectorial), kTvTolerance),
      make_op<K, alg::GapTvIteration>("gap_tv_step", gap_iteration<false>, cases_of(Kind::gap), kTvTolerance),
      make_op<K, alg::AdmmTvIteration>("admm_tv_step", admm_iteration<false>, cases_of(Kind::admm), kTvTolerance),
      make_op<K, alg::GapTvVectorialIteration>("gap_tv_vectorial_step", gap_iteration<true>,
                                               cases_of(Kind::gap_vectorial), kTvTolerance),
      make_op<K, alg::AdmmTvVectorialIteration>("admm_tv_vectorial_step", admm_iteration<true>,
                                                cases_of(Kind::admm_vectorial), kTvTolerance),
  };
}

}  // namespace hpipe::tune
