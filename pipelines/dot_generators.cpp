// AOT generator of the batched dot product: inputs/outputs, estimates, schedule. The algorithm is
// in generators/dot.cpp, the schedules in schedules/dot_{cpu,cuda}.cpp.
#include "generators/dot.h"
#include "pipelines/generator_base.h"
#include "schedules/dot.h"

namespace hpipe {
namespace {

using namespace Halide;

template <class T>
class BatchedDotGenerator : public Generator<BatchedDotGenerator<T>> {
 public:
  GeneratorParam<std::string> knobs{"knobs", ""};
  GeneratorInput<Buffer<T>> a{"a", 2};
  GeneratorInput<Buffer<T>> b{"b", 2};
  GeneratorOutput<Buffer<T>> out{"out", 1};

  void generate() {
    auto op = alg::batched_dot(a, b, a.dim(0).extent());
    out = op.out;
    const alg::DotEstimates e;
    a.set_estimates(e.matrix());
    b.set_estimates(e.matrix());
    out.set_estimates(e.out());
    apply_schedule<sched::DotKnobs>(op, this->get_target(), knobs);
  }
};

// Column-major operands: a(i, k), b(i, k), the views of transposed (N, K) arrays.
template <class T>
class BatchedDotColumnsGenerator : public Generator<BatchedDotColumnsGenerator<T>> {
 public:
  GeneratorParam<std::string> knobs{"knobs", ""};
  GeneratorInput<Buffer<T>> a{"a", 2};
  GeneratorInput<Buffer<T>> b{"b", 2};
  GeneratorOutput<Buffer<T>> out{"out", 1};

  void generate() {
    auto op = alg::batched_dot_columns(a, b, a.dim(1).extent());
    out = op.out;
    const alg::DotEstimates e;
    a.set_estimates(e.columns());
    b.set_estimates(e.columns());
    out.set_estimates(e.out());
    apply_schedule<sched::DotKnobs>(op, this->get_target(), knobs);
  }
};

}  // namespace
}  // namespace hpipe

HPIPE_REGISTER_GENERATOR(hpipe::BatchedDotGenerator, batched_dot)
HPIPE_REGISTER_GENERATOR(hpipe::BatchedDotColumnsGenerator, batched_dot_columns)
