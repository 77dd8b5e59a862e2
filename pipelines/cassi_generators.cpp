// AOT generators of the CASSI family: inputs/outputs, estimates, schedule. The algorithm is in
// generators/cassi.cpp, the schedules in schedules/cassi_{cpu,cuda}.cpp.
//
// Every mask input is 3-D (w, h, c); the runtime passes a shared (H, W) mask with a c-stride of 0.
#include <type_traits>

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
  CassiGeometry geometry() { return alg::mask_geometry(mask, step, axis); }
  void set_estimates(const CassiEstimates &e) {
    mask.set_estimates(e.mask());
    step.set_estimate(e.step);
    axis.set_estimate(e.axis);
  }
};

// A buffer an op over the mask reads or writes: its name, rank and estimate.
struct Data {
  const char *name;
  int rank;  // 0: no buffer (phi reads nothing but the mask)
  Region (CassiEstimates::*estimate)() const;
};
constexpr Data kCube{"x", 4, &CassiEstimates::cube};
constexpr Data kMeasurement{"y", 3, &CassiEstimates::measurement};
constexpr Data kPhi{"phi", 2, &CassiEstimates::phi};
constexpr Data kNoData{"", 0, nullptr};

// The ops over the mask: what each reads and writes, its algorithm and which Func is the output.
struct Forward {
  static constexpr Data in = kCube, out = kMeasurement;
  static constexpr auto output = &alg::CassiForward::y;
  static alg::CassiForward algorithm(Func x, Func mask, const CassiGeometry &g, const Target &t) {
    return alg::cassi_forward(x, mask, g, alg::band_sum_form(t));
  }
};
struct Adjoint {
  static constexpr Data in = kMeasurement, out = kCube;
  static constexpr auto output = &alg::CassiAdjoint::x;
  static alg::CassiAdjoint algorithm(Func y, Func mask, const CassiGeometry &g, const Target &) {
    return alg::cassi_adjoint(y, mask, g);
  }
};
struct Phi {
  static constexpr Data in = kNoData, out = kPhi;
  static constexpr auto output = &alg::CassiPhi::phi;
  static alg::CassiPhi algorithm(Func, Func mask, const CassiGeometry &g, const Target &t) {
    return alg::cassi_phi(mask, g, alg::band_sum_form(t));
  }
};
struct Pinv {
  static constexpr Data in = kMeasurement, out = kCube;
  static constexpr auto output = &alg::CassiPinv::x;
  static alg::CassiPinv algorithm(Func y, Func mask, const CassiGeometry &g, const Target &t) {
    return alg::cassi_pinv(y, mask, g, alg::band_sum_form(t));
  }
};
struct PinvAlpha {
  static constexpr Data in = kMeasurement, out = kCube;
  static constexpr auto output = &alg::CassiPinvAlpha::x;
  static alg::CassiPinvAlpha algorithm(Func y, Func mask, const CassiGeometry &g, const Target &) {
    return alg::cassi_pinv_alpha(y, mask, g);
  }
};

// Where an op reads no buffer besides the mask: nothing, so that its arguments start at the mask.
struct NoInput {
  NoInput(const char *, int) {}
};

// The generator of an op over the mask: arguments (in, mask, step, axis, out).
template <class T, class Op>
class CassiGenerator : public FamilyGenerator<CassiGenerator<T, Op>, sched::CassiKnobs> {
  static constexpr bool kHasInput = Op::in.rank > 0;

 public:
  std::conditional_t<kHasInput, GeneratorInput<Buffer<T>>, NoInput> in{Op::in.name, Op::in.rank};
  CassiArgs<T> args;
  GeneratorOutput<Buffer<T>> out{Op::out.name, Op::out.rank};

  void generate() {
    Func data;
    if constexpr (kHasInput) data = in;
    const auto op = Op::algorithm(data, args.mask, args.geometry(), this->get_target());
    out = op.*Op::output;
    this->template align_streamed_output<T>(out);
    const CassiEstimates e;
    if constexpr (kHasInput) in.set_estimates((e.*Op::in.estimate)());
    args.set_estimates(e);
    out.set_estimates((e.*Op::out.estimate)());
    this->schedule_with_knobs(op);
  }
};
template <class T>
using CassiForwardGenerator = CassiGenerator<T, Forward>;
template <class T>
using CassiAdjointGenerator = CassiGenerator<T, Adjoint>;
template <class T>
using CassiPhiGenerator = CassiGenerator<T, Phi>;
template <class T>
using CassiPinvGenerator = CassiGenerator<T, Pinv>;
template <class T>
using CassiPinvAlphaGenerator = CassiGenerator<T, PinvAlpha>;

// shift (zero-pad, cube -> shifted cube) and shift_back (crop): no mask; the geometry comes from
// the input, less the dispersion for shift_back.
template <class T, bool kBack>
class CassiShiftGenerator : public FamilyGenerator<CassiShiftGenerator<T, kBack>, sched::CassiKnobs> {
 public:
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
    this->template align_streamed_output<T>(out);
    const CassiEstimates e;
    in.set_estimates(kBack ? e.shifted_cube() : e.cube());
    out.set_estimates(kBack ? e.cube() : e.shifted_cube());
    step.set_estimate(e.step);
    axis.set_estimate(e.axis);
    this->schedule_with_knobs(op);
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
