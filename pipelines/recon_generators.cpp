// AOT generators of the reconstruction family: the TV denoiser and one iteration of GAP-TV and of
// ADMM-TV. Algorithms in generators/recon.cpp, schedules in schedules/recon_{cpu,cuda}.cpp; the
// iteration loops are in runtime/src/recon.cpp.
//
// Masks are 3-D (w, h, c) as in the CASSI family (a shared mask has a c-stride of 0); phi is the
// output of cassi_phi for that mask, computed once per reconstruction.
#include "generators/recon.h"
#include "pipelines/generator_base.h"
#include "schedules/recon.h"

namespace hpipe {
namespace {

using namespace Halide;
using alg::CassiGeometry;
using alg::ReconEstimates;

// Inputs every reconstruction step has: measurement, mask, phi, dispersion and the TV parameters.
template <class T>
struct ReconArgs {
  GeneratorInput<Buffer<T>> y{"measurement", 3};
  GeneratorInput<Buffer<T>> mask{"coded_mask", 3};
  GeneratorInput<Buffer<T>> phi{"phi", 2};
  GeneratorInput<int> step{"step"};
  GeneratorInput<int> axis{"axis"};
  GeneratorInput<T> lambda{"lambda"};
  GeneratorInput<T> tv_weight{"tv_weight"};
  GeneratorInput<int> tv_iterations{"tv_iterations"};
  GeneratorInput<int> tv_strip_rows{"tv_strip_rows"};

  CassiGeometry geometry() { return alg::mask_geometry(mask, step, axis); }
  void set_estimates(const ReconEstimates &e) {
    y.set_estimates(e.cassi.measurement());
    mask.set_estimates(e.cassi.mask());
    phi.set_estimates(e.cassi.phi());
    step.set_estimate(e.cassi.step);
    axis.set_estimate(e.cassi.axis);
    lambda.set_estimate(T(1));
    tv_weight.set_estimate(T(0.1));
    tv_iterations.set_estimate(e.tv_iterations);
    tv_strip_rows.set_estimate(e.cassi.height / 2);
  }
};

template <class T>
class TvChambolleGenerator : public FamilyGenerator<TvChambolleGenerator<T>, sched::ReconKnobs> {
 public:
  GeneratorInput<Buffer<T>> x{"image", 4};
  GeneratorInput<T> weight{"weight"};
  GeneratorInput<int> iterations{"iterations"};
  GeneratorInput<int> strip_rows{"strip_rows"};
  GeneratorOutput<Buffer<T>> out{"out", 4};

  void generate() {
    auto op = alg::tv_chambolle(x, x.dim(0).extent(), x.dim(1).extent(), weight, iterations, strip_rows);
    out = op.out;
    const ReconEstimates e;
    x.set_estimates(e.cassi.cube());
    weight.set_estimate(T(0.1));
    iterations.set_estimate(e.tv_iterations);
    strip_rows.set_estimate(e.cassi.height / 2);
    out.set_estimates(e.cassi.cube());
    this->schedule_with_knobs(op);
  }
};

// Vectorial TV: every step in one sweep (generators/recon.h), strips of `strip_rows` rows in
// parallel.
template <class T>
class TvVectorialGenerator : public FamilyGenerator<TvVectorialGenerator<T>, sched::ReconKnobs> {
 public:
  GeneratorInput<Buffer<T>> x{"image", 4};
  GeneratorInput<T> weight{"weight"};
  GeneratorInput<int> iterations{"iterations"};
  GeneratorInput<int> strip_rows{"strip_rows"};
  GeneratorOutput<Buffer<T>> out{"out", 4};

  void generate() {
    auto op = alg::tv_vectorial(x, x.dim(0).extent(), x.dim(1).extent(), x.dim(2).extent(), weight, iterations,
                                strip_rows, false, alg::tv_vectorial_form(this->get_target()));
    out = op.out;
    const ReconEstimates e;
    x.set_estimates(e.cassi.cube());
    weight.set_estimate(T(0.1));
    iterations.set_estimate(e.tv_iterations);
    strip_rows.set_estimate(e.cassi.height / 2);
    out.set_estimates(e.cassi.cube());
    this->schedule_with_knobs(op);
  }
};

// One GAP-TV iteration; Vectorial: with the band-coupled TV, in the form the target takes.
template <class T, bool Vectorial>
class GapTvGenerator : public FamilyGenerator<GapTvGenerator<T, Vectorial>, sched::ReconKnobs> {
 public:
  GeneratorInput<Buffer<T>> x{"x_prev", 4};
  GeneratorInput<Buffer<T>> y1{"y1_prev", 3};
  ReconArgs<T> args;
  GeneratorInput<int> accelerate{"accelerate"};
  GeneratorOutput<Buffer<T>> x_next{"x_next", 4};
  GeneratorOutput<Buffer<T>> y1_next{"y1_next", 3};

  void generate() {
    const alg::BandSumForm form = alg::band_sum_form(this->get_target());
    if constexpr (Vectorial) {
      finish(alg::gap_tv_vectorial_iteration(x, args.y, y1, args.mask, args.phi, args.geometry(), form, args.lambda,
                                             accelerate, args.tv_weight, args.tv_iterations, args.tv_strip_rows,
                                             alg::tv_vectorial_form(this->get_target())));
    } else {
      finish(alg::gap_tv_iteration(x, args.y, y1, args.mask, args.phi, args.geometry(), form, args.lambda, accelerate,
                                   args.tv_weight, args.tv_iterations, args.tv_strip_rows));
    }
  }

 private:
  template <class Op>
  void finish(const Op &op) {
    x_next = op.tv.out;
    y1_next = op.y1;
    const ReconEstimates e;
    x.set_estimates(e.cassi.cube());
    y1.set_estimates(e.cassi.measurement());
    args.set_estimates(e);
    accelerate.set_estimate(1);
    x_next.set_estimates(e.cassi.cube());
    y1_next.set_estimates(e.cassi.measurement());
    this->schedule_with_knobs(op);
  }
};
template <class T>
using GapTvBandGenerator = GapTvGenerator<T, false>;
template <class T>
using GapTvVectorialGenerator = GapTvGenerator<T, true>;

// One ADMM-TV iteration; Vectorial: with the band-coupled TV, in the form the target takes.
template <class T, bool Vectorial>
class AdmmTvGenerator : public FamilyGenerator<AdmmTvGenerator<T, Vectorial>, sched::ReconKnobs> {
 public:
  GeneratorInput<Buffer<T>> theta{"theta_prev", 4};
  GeneratorInput<Buffer<T>> b{"b_prev", 4};
  ReconArgs<T> args;
  GeneratorInput<T> gamma{"gamma"};
  GeneratorOutput<Func> next{"next", {type_of<T>(), type_of<T>()}, 4};  // (theta', b')

  void generate() {
    const alg::BandSumForm form = alg::band_sum_form(this->get_target());
    if constexpr (Vectorial) {
      finish(alg::admm_tv_vectorial_iteration(theta, b, args.y, args.mask, args.phi, args.geometry(), form, args.lambda,
                                              gamma, args.tv_weight, args.tv_iterations, args.tv_strip_rows,
                                              alg::tv_vectorial_form(this->get_target())));
    } else {
      finish(alg::admm_tv_iteration(theta, b, args.y, args.mask, args.phi, args.geometry(), form, args.lambda, gamma,
                                    args.tv_weight, args.tv_iterations, args.tv_strip_rows));
    }
  }

 private:
  template <class Op>
  void finish(const Op &op) {
    next = op.out;
    const ReconEstimates e;
    theta.set_estimates(e.cassi.cube());
    b.set_estimates(e.cassi.cube());
    args.set_estimates(e);
    gamma.set_estimate(T(0.01));
    next.set_estimates(e.cassi.cube());
    this->schedule_with_knobs(op);
  }
};
template <class T>
using AdmmTvBandGenerator = AdmmTvGenerator<T, false>;
template <class T>
using AdmmTvVectorialGenerator = AdmmTvGenerator<T, true>;

}  // namespace
}  // namespace hpipe

HPIPE_REGISTER_GENERATOR(hpipe::TvChambolleGenerator, tv_chambolle)
HPIPE_REGISTER_GENERATOR(hpipe::TvVectorialGenerator, tv_vectorial)
HPIPE_REGISTER_GENERATOR(hpipe::GapTvBandGenerator, gap_tv_step)
HPIPE_REGISTER_GENERATOR(hpipe::GapTvVectorialGenerator, gap_tv_vectorial_step)
HPIPE_REGISTER_GENERATOR(hpipe::AdmmTvBandGenerator, admm_tv_step)
HPIPE_REGISTER_GENERATOR(hpipe::AdmmTvVectorialGenerator, admm_tv_vectorial_step)
