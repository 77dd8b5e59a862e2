// AOT generators of the CASSI family: inputs/outputs, estimates, schedule. The algorithm is in
// generators/cassi.cpp, the schedules in schedules/cassi_{cpu,cuda}.cpp.
//
// Every mask input is 3-D (w, h, c); the runtime passes a shared (H, W) mask with a c-stride of 0.
#include "generators/cassi.h"
#include "pipelines/generator_base.h"
#include "schedules/cassi.h"

namespace hpipe {
namespace {

using namespace Halide;
using alg::CassiEstimates;
using alg::CassiGeometry;

// Inputs every CASSI op has: the mask, the signed step and the dispersion axis.
template <class T>
struct CassiArgs {
  GeneratorInput<Buffer<T>> mask{"mask", 3};
  GeneratorInput<int> step{"step"};
  GeneratorInput<int> axis{"axis"};

  // The cube's width, height and band count are those of the mask.
  CassiGeometry geometry() {
    return {mask.dim(0).extent(), mask.dim(1).extent(), mask.dim(2).extent(), step, axis};
  }
  void set_estimates(const CassiEstimates &e) {
    mask.set_estimates(e.mask());
    step.set_estimate(e.step);
    axis.set_estimate(e.axis);
  }
};

template <class T>
class CassiForwardGenerator : public Generator<CassiForwardGenerator<T>> {
 public:
  GeneratorParam<std::string> knobs{"knobs", ""};
  GeneratorInput<Buffer<T>> x{"x", 4};
  CassiArgs<T> args;
  GeneratorOutput<Buffer<T>> y{"y", 3};

  void generate() {
    auto op = alg::cassi_forward(x, args.mask, args.geometry(), alg::band_sum_form(this->get_target()));
    y = op.y;
    const CassiEstimates e;
    x.set_estimates(e.cube());
    args.set_estimates(e);
    y.set_estimates(e.measurement());
    apply_schedule<sched::CassiKnobs>(op, this->get_target(), knobs);
  }
};

template <class T>
class CassiAdjointGenerator : public Generator<CassiAdjointGenerator<T>> {
 public:
  GeneratorParam<std::string> knobs{"knobs", ""};
  GeneratorInput<Buffer<T>> y{"y", 3};
  CassiArgs<T> args;
  GeneratorOutput<Buffer<T>> x{"x", 4};

  void generate() {
    auto op = alg::cassi_adjoint(y, args.mask, args.geometry());
    x = op.x;
    const CassiEstimates e;
    y.set_estimates(e.measurement());
    args.set_estimates(e);
    x.set_estimates(e.cube());
    apply_schedule<sched::CassiKnobs>(op, this->get_target(), knobs);
  }
};

template <class T>
class CassiPhiGenerator : public Generator<CassiPhiGenerator<T>> {
 public:
  GeneratorParam<std::string> knobs{"knobs", ""};
  CassiArgs<T> args;
  GeneratorOutput<Buffer<T>> phi{"phi", 2};

  void generate() {
    auto op = alg::cassi_phi(args.mask, args.geometry(), alg::band_sum_form(this->get_target()));
    phi = op.phi;
    const CassiEstimates e;
    args.set_estimates(e);
    phi.set_estimates(e.phi());
    apply_schedule<sched::CassiKnobs>(op, this->get_target(), knobs);
  }
};

template <class T>
class CassiPinvGenerator : public Generator<CassiPinvGenerator<T>> {
 public:
  GeneratorParam<std::string> knobs{"knobs", ""};
  GeneratorInput<Buffer<T>> y{"y", 3};
  CassiArgs<T> args;
  GeneratorOutput<Buffer<T>> x{"x", 4};

  void generate() {
    auto op = alg::cassi_pinv(y, args.mask, args.geometry(), alg::band_sum_form(this->get_target()));
    x = op.x;
    const CassiEstimates e;
    y.set_estimates(e.measurement());
    args.set_estimates(e);
    x.set_estimates(e.cube());
    apply_schedule<sched::CassiKnobs>(op, this->get_target(), knobs);
  }
};

template <class T>
class CassiPinvAlphaGenerator : public Generator<CassiPinvAlphaGenerator<T>> {
 public:
  GeneratorParam<std::string> knobs{"knobs", ""};
  GeneratorInput<Buffer<T>> y{"y", 3};
  CassiArgs<T> args;
  GeneratorOutput<Buffer<T>> x{"x", 4};

  void generate() {
    auto op = alg::cassi_pinv_alpha(y, args.mask, args.geometry());
    x = op.x;
    const CassiEstimates e;
    y.set_estimates(e.measurement());
    args.set_estimates(e);
    x.set_estimates(e.cube());
    apply_schedule<sched::CassiKnobs>(op, this->get_target(), knobs);
  }
};

// shift (zero-pad, cube -> shifted cube) and shift_back (crop): no mask; the geometry comes from
// the input, less the dispersion for shift_back.
template <class T, bool kBack>
class CassiShiftGenerator : public Generator<CassiShiftGenerator<T, kBack>> {
 public:
  GeneratorParam<std::string> knobs{"knobs", ""};
  GeneratorInput<Buffer<T>> in{"in", 4};
  GeneratorInput<int> step{"step"};
  GeneratorInput<int> axis{"axis"};
  GeneratorOutput<Buffer<T>> out{"out", 4};

  void generate() {
    Expr bands = in.dim(2).extent();
    Expr spread = kBack ? (bands - 1) * abs(step) : Expr(0);
    CassiGeometry g{in.dim(0).extent() - select(axis == 0, spread, 0),
                    in.dim(1).extent() - select(axis == 1, spread, 0), bands, step, axis};
    auto op = kBack ? alg::cassi_shift_back(in, g) : alg::cassi_shift(in, g);
    out = op.out;
    const CassiEstimates e;
    in.set_estimates(kBack ? e.shifted_cube() : e.cube());
    out.set_estimates(kBack ? e.cube() : e.shifted_cube());
    step.set_estimate(e.step);
    axis.set_estimate(e.axis);
    apply_schedule<sched::CassiKnobs>(op, this->get_target(), knobs);
  }
};
template <class T>
using CassiShiftForwardGenerator = CassiShiftGenerator<T, false>;
template <class T>
using CassiShiftBackGenerator = CassiShiftGenerator<T, true>;

}  // namespace
}  // namespace hpipe

HPIPE_REGISTER_GENERATOR(hpipe::CassiForwardGenerator, cassi_forward)
HPIPE_REGISTER_GENERATOR(hpipe::CassiAdjointGenerator, cassi_adjoint)
HPIPE_REGISTER_GENERATOR(hpipe::CassiPhiGenerator, cassi_phi)
HPIPE_REGISTER_GENERATOR(hpipe::CassiPinvGenerator, cassi_pinv)
HPIPE_REGISTER_GENERATOR(hpipe::CassiPinvAlphaGenerator, cassi_pinv_alpha)
HPIPE_REGISTER_GENERATOR(hpipe::CassiShiftForwardGenerator, cassi_shift)
HPIPE_REGISTER_GENERATOR(hpipe::CassiShiftBackGenerator, cassi_shift_back)
