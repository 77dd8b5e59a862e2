// AOT generator of the batched dot product: inputs/outputs, estimates, schedule. The algorithm is
// in generators/dot.cpp, the schedules in schedules/dot_{cpu,cuda}.cpp.
#include "generators/dot.h"
#include "pipelines/generator_base.h"
#include "schedules/dot.h"

namespace hpipe {
namespace {

using namespace Halide;

// Row-major operands a(k, i), b(k, i) (Halide order): `head`, the products before a's rows reach a
// cache line, summed on their own (generators/dot.h).
template <class T>
class BatchedDotRowsGenerator : public FamilyGenerator<BatchedDotRowsGenerator<T>, sched::DotKnobs> {
 public:
  GeneratorInput<Buffer<T>> a{"a", 2};
  GeneratorInput<Buffer<T>> b{"b", 2};
  GeneratorInput<int> head{"head"};
  GeneratorOutput<Buffer<T>> out{"out", 1};

  void generate() {
    const alg::DotEstimates e;
    const auto op = alg::batched_dot(a, b, a.dim(0).extent(), head);
    out = op.out;
    a.set_estimates(e.matrix());
    b.set_estimates(e.matrix());
    head.set_estimate(0);
    out.set_estimates(e.out());
    this->schedule_with_knobs(op);
  }
};

// Column-major operands a(i, k), b(i, k): the views of transposed (N, K) arrays. Out = double:
// partial results for the runtime, which reads few interleaved columns as many
// (runtime/src/dot.cpp).
template <class T, class Out = T>
class BatchedDotColumnsGenerator : public FamilyGenerator<BatchedDotColumnsGenerator<T, Out>, sched::DotKnobs> {
 public:
  GeneratorInput<Buffer<T>> a{"a", 2};
  GeneratorInput<Buffer<T>> b{"b", 2};
  GeneratorOutput<Buffer<Out>> out{"out", 1};

  void generate() {
    const alg::DotEstimates e;
    const auto op = alg::batched_dot_columns(a, b, a.dim(1).extent(), halide_type_of<Out>());
    out = op.out;
    a.set_estimates(e.columns());
    b.set_estimates(e.columns());
    out.set_estimates(e.out());
    this->schedule_with_knobs(op);
  }
};

}  // namespace

using BatchedDotColumnsPartialF32Generator = BatchedDotColumnsGenerator<float, double>;

}  // namespace hpipe

HPIPE_REGISTER_GENERATOR(hpipe::BatchedDotRowsGenerator, batched_dot)
HPIPE_REGISTER_GENERATOR(hpipe::BatchedDotColumnsGenerator, batched_dot_columns)
HALIDE_REGISTER_GENERATOR(hpipe::BatchedDotColumnsPartialF32Generator, batched_dot_columns_partial_f32)
