// The CASSI family's entry in the tuner registry: its seven ops on JIT parameters, their cases
// and tolerances. The algorithms, estimates and knob structs are the generators' own.
#include <sstream>

#include "generators/cassi.h"
#include "schedules/cassi.h"
#include "tests/reference/cassi_reference.h"
#include "tools/tune/case_util.h"

namespace hpipe::tune {
namespace {

using namespace Halide;
using alg::CassiEstimates;
using alg::CassiGeometry;
using reference::CassiProblem;

// The tests' tolerances (float32 band sums do not depend on the band count).
const Tolerance kBandSum = tolerance::cassi_band_sum<float>(28);
const Tolerance kBandSumQuotient = tolerance::cassi_band_sum_quotient<float>(28);
const Tolerance kFewRoundings = tolerance::cassi_few_roundings<float>();

// The parameters every CASSI op has, with the generators' estimates (W4).
struct CassiParams {
  ImageParam mask{Float(32), 3, "mask"};
  Param<int> step{"step"}, axis{"axis"};
  CassiEstimates e;

  explicit CassiParams(Built &built) {
    mask.set_estimates(e.mask());
    step.set_estimate(e.step);
    axis.set_estimate(e.axis);
    built.buffers.push_back(mask);
    built.scalars.push_back(step);
    built.scalars.push_back(axis);
  }
  CassiGeometry geometry() const { return alg::mask_geometry(mask, step, axis); }
};

// The problems: the timing one first (W4, or a small one for CI), then odd verification ones.
std::vector<CassiProblem> problems(Size size) {
  std::vector<CassiProblem> list;
  if (size == Size::workload) {
    list.push_back({16, 28, 256, 256, 2});
  } else {
    list.push_back({2, 6, 32, 48, 2});
  }
  list.push_back({2, 5, 13, 37, -2, false, true});  // odd sizes, negative step, per-band mask
  list.push_back({1, 4, 11, 3, -5, true});          // along height, step > W, narrower than a vector
  return list;
}

std::string describe(const CassiProblem &p) {
  std::ostringstream s;
  s << "B=" << p.B << ",C=" << p.C << ",H=" << p.H << ",W=" << p.W << ",S=" << p.step
    << ",axis=" << (p.along_height ? "h" : "w") << ",mask=" << (p.per_band_mask ? "per_band" : "shared");
  return s.str();
}

// What a case of one op needs: inputs by kind, the reference, the output shape.
enum class Kind { forward, adjoint, phi, pinv, pinv_alpha, shift, shift_back };

Case make_case(Kind kind, const CassiProblem &p, std::uint32_t seed) {
  const int B = int(p.B), C = int(p.C), H = int(p.H), W = int(p.W), Hm = int(p.Hm()), Wm = int(p.Wm());
  const auto cube = random_values(p.B * p.C * p.H * p.W, seed);
  const auto meas = random_values(p.B * p.Hm() * p.Wm(), seed + 1);
  const auto mask = random_values((p.per_band_mask ? p.C : 1) * p.H * p.W, seed + 2);
  const auto shifted = reference::cassi_shift(p, random_values(p.B * p.C * p.H * p.W, seed + 3));
  Arg mask_arg{"mask", true, {W, H, C}, {1, W, p.per_band_mask ? W * H : 0}, mask};
  const std::vector<Arg> geometry = {int_arg("step", int(p.step)), int_arg("axis", p.along_height)};

  Case c;
  c.shape = describe(p);
  const std::vector<int> cube_extents{W, H, C, B}, meas_extents{Wm, Hm, B};
  switch (kind) {
    case Kind::forward:
      c.inputs = {dense("x", cube_extents, cube), mask_arg};
      c.output_name = "y", c.output_extents = meas_extents, c.expected = reference::cassi_forward(p, cube, mask);
      break;
    case Kind::adjoint:
    case Kind::pinv:
    case Kind::pinv_alpha:
      c.inputs = {dense("y", meas_extents, meas), mask_arg};
      c.output_name = "x", c.output_extents = cube_extents;
      c.expected = kind == Kind::adjoint ? reference::cassi_adjoint(p, meas, mask)
                   : kind == Kind::pinv  ? reference::cassi_pinv(p, meas, mask)
                                         : reference::cassi_pinv_alpha(p, meas, mask);
      break;
    case Kind::phi:
      c.inputs = {mask_arg};
      c.output_name = "phi", c.output_extents = {Wm, Hm}, c.expected = reference::cassi_phi(p, mask);
      break;
    case Kind::shift:
      c.inputs = {dense("in", cube_extents, cube)};
      c.output_name = "out", c.output_extents = {Wm, Hm, C, B}, c.expected = reference::cassi_shift(p, cube);
      break;
    case Kind::shift_back:
      c.inputs = {dense("in", {Wm, Hm, C, B}, shifted)};
      c.output_name = "out", c.output_extents = cube_extents;
      c.expected = reference::cassi_shift_back(p, shifted);
      break;
  }
  c.inputs.insert(c.inputs.end(), geometry.begin(), geometry.end());
  return c;
}

std::function<std::vector<Case>(Size, std::uint32_t)> cases_of(Kind kind) {
  return [kind](Size size, std::uint32_t seed) {
    std::vector<Case> list;
    for (const auto &p : problems(size)) list.push_back(make_case(kind, p, seed += 10));
    return list;
  };
}

// Ops whose input is a measurement y and whose output is a cube x.
// The band-sum form follows the target, as in the generators.
template <class Op, class... Form>
std::function<Op(Built &)> measurement_to_cube(Op (*algorithm)(Func, Func, const CassiGeometry &, Form...)) {
  return [algorithm](Built &built) {
    const CassiEstimates e;
    ImageParam y = buffer_param(built, "y", 3, e.measurement());
    CassiParams args(built);
    Op op;
    if constexpr (sizeof...(Form) == 0) {
      op = algorithm(y, args.mask, args.geometry());
    } else {
      op = algorithm(y, args.mask, args.geometry(), alg::band_sum_form(built.target));
    }
    set_output(built, op.x, e.cube());
    return op;
  };
}

// shift (zero-pad) and shift_back (crop): the geometry comes from the input, as in the generator.
std::function<alg::CassiShift(Built &)> shift(bool back) {
  return [back](Built &built) {
    const CassiEstimates e;
    ImageParam in = buffer_param(built, "in", 4, back ? e.shifted_cube() : e.cube());
    Param<int> step = int_param(built, "step", e.step), axis = int_param(built, "axis", e.axis);
    Expr bands = in.dim(2).extent();
    Expr spread = back ? (bands - 1) * abs(step) : Expr(0);
    CassiGeometry g{in.dim(0).extent() - select(axis == 0, spread, 0),
                    in.dim(1).extent() - select(axis == 1, spread, 0), bands, step, axis};
    alg::CassiShift op = back ? alg::cassi_shift_back(in, g) : alg::cassi_shift(in, g);
    set_output(built, op.out, back ? e.cube() : e.shifted_cube());
    return op;
  };
}

}  // namespace

HPIPE_TUNE_FAMILY(cassi) {
  using K = sched::CassiKnobs;
  std::function<alg::CassiForward(Built &)> forward = [](Built &built) {
    const CassiEstimates e;
    ImageParam x = buffer_param(built, "x", 4, e.cube());
    CassiParams args(built);
    auto op = alg::cassi_forward(x, args.mask, args.geometry(), alg::band_sum_form(built.target));
    set_output(built, op.y, e.measurement());
    return op;
  };
  std::function<alg::CassiPhi(Built &)> phi = [](Built &built) {
    CassiParams args(built);
    auto op = alg::cassi_phi(args.mask, args.geometry(), alg::band_sum_form(built.target));
    set_output(built, op.phi, args.e.phi());
    return op;
  };
  return {
      make_op<K, alg::CassiForward>("cassi_forward", forward, cases_of(Kind::forward), kBandSum),
      make_op<K, alg::CassiAdjoint>("cassi_adjoint", measurement_to_cube(&alg::cassi_adjoint), cases_of(Kind::adjoint),
                                    kFewRoundings),
      make_op<K, alg::CassiPhi>("cassi_phi", phi, cases_of(Kind::phi), kBandSum),
      make_op<K, alg::CassiPinv>("cassi_pinv", measurement_to_cube(&alg::cassi_pinv), cases_of(Kind::pinv),
                                 kBandSumQuotient),
      make_op<K, alg::CassiPinvAlpha>("cassi_pinv_alpha", measurement_to_cube(&alg::cassi_pinv_alpha),
                                      cases_of(Kind::pinv_alpha), kFewRoundings),
      make_op<K, alg::CassiShift>("cassi_shift", shift(false), cases_of(Kind::shift), tolerance::kExact),
      make_op<K, alg::CassiShift>("cassi_shift_back", shift(true), cases_of(Kind::shift_back), tolerance::kExact),
  };
}

}  // namespace hpipe::tune
