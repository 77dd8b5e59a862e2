// AOT generators of the math family: inputs/outputs, estimates, schedule. The algorithms
// are in generators/math.cpp, the schedules in schedules/math_{cpu,cuda}.cpp.
//
// Elementwise kernels are 1-D (the runtime flattens dense arrays of any rank); logsumexp reduces
// the middle dimension of x(i, r, o) (inner, axis, outer).
#include <type_traits>

#include "generators/math.h"
#include "pipelines/generator_base.h"
#include "schedules/math.h"

namespace hpipe {
namespace {

using namespace Halide;
using alg::MathEstimates;
using alg::MathFunction;

template <class T, MathFunction Fn>
class ElementwiseGenerator : public FamilyGenerator<ElementwiseGenerator<T, Fn>, sched::MathElementwiseKnobs> {
 public:
  GeneratorInput<Buffer<T>> x{"x", 1};
  GeneratorOutput<Buffer<T>> y{"y", 1};

  void generate() {
    // Elements are numbered from 0 (the runtime's buffers are): the grouped form's groups start there.
    x.dim(0).set_min(0);
    auto op = alg::elementwise(x, x.dim(0).extent(), Fn, sched::elementwise_group_lanes(this->get_target(), x.type()));
    y = op.y;
    y.dim(0).set_min(0);
    this->template align_streamed_output<T>(y);
    const MathEstimates e;
    x.set_estimates(e.flat());
    y.set_estimates(e.flat());
    this->schedule_with_knobs(op);
  }
};
template <class T>
using ExpGenerator = ElementwiseGenerator<T, MathFunction::exp>;
template <class T>
using LogGenerator = ElementwiseGenerator<T, MathFunction::log>;
template <class T>
using ErfGenerator = ElementwiseGenerator<T, MathFunction::erf>;

// Out = double with float input: partial results for a caller that combines them further, without
// a rounding to float in between: of contiguous rows cut into vectors of 16 (the runtime's
// kRowLanes; row_vectors), or of segments of the rows of a column reduction (column_blocks).
template <class T, class Out = T, alg::LogSumExpReads kReads = alg::LogSumExpReads::column_blocks>
class LogSumExpGenerator : public FamilyGenerator<LogSumExpGenerator<T, Out, kReads>, sched::MathLogSumExpKnobs> {
 public:
  GeneratorInput<Buffer<T>> x{"x", 3};
  GeneratorOutput<Buffer<Out>> out{"out", 2};

  void generate() {
    const auto reads = kReads;
    const auto chunks = sched::logsumexp_chunks(this->get_target(), x.type(), reads);
    auto op = alg::logsumexp(x, ImageParam(x).parameter(), x.dim(1).extent(), chunks, halide_type_of<Out>(), reads);
    out = op.out;
    const MathEstimates e;
    x.set_estimates(e.matrix());
    out.set_estimates(e.reduced());
    this->schedule_with_knobs(op);
  }
};

// logsumexp along contiguous rows of at least sched::kLogSumExpRowBlock elements, each row in
// cache (the rows kernel): x (k, r), out (r).
template <class T>
class LogSumExpRowsGenerator : public FamilyGenerator<LogSumExpRowsGenerator<T>, sched::MathLogSumExpKnobs> {
 public:
  GeneratorInput<Buffer<T>> x{"x", 2};
  GeneratorOutput<Buffer<T>> out{"out", 1};

  void generate() {
    x.dim(0).set_stride(1);  // every block is one vector load
    Expr n = x.dim(0).extent();
    auto op = alg::logsumexp_rows(x, n, sched::kLogSumExpRowBlock, halide_type_of<T>());
    out = op.out;
    this->add_requirement(n >= sched::kLogSumExpRowBlock, "logsumexp rows kernel: rows of at least",
                          sched::kLogSumExpRowBlock, "elements, got", n);
    const MathEstimates e;
    x.set_estimates(e.rows_of_matrix());
    out.set_estimates(e.per_row());
    this->schedule_with_knobs(op);
  }
};

}  // namespace

using LogSumExpPartialF32Generator = LogSumExpGenerator<float, double, alg::LogSumExpReads::row_vectors>;
using LogSumExpColumnsPartialF32Generator = LogSumExpGenerator<float, double>;

}  // namespace hpipe

HPIPE_REGISTER_GENERATOR(hpipe::ExpGenerator, math_exp)
HPIPE_REGISTER_GENERATOR(hpipe::LogGenerator, math_log)
HPIPE_REGISTER_GENERATOR(hpipe::ErfGenerator, math_erf)
HPIPE_REGISTER_GENERATOR(hpipe::LogSumExpGenerator, math_logsumexp)
HPIPE_REGISTER_GENERATOR(hpipe::LogSumExpRowsGenerator, math_logsumexp_rows)
HALIDE_REGISTER_GENERATOR(hpipe::LogSumExpPartialF32Generator, math_logsumexp_partial_f32)
HALIDE_REGISTER_GENERATOR(hpipe::LogSumExpColumnsPartialF32Generator, math_logsumexp_columns_partial_f32)
