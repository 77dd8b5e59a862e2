// AOT generator of the batched dot product: inputs/outputs, estimates, schedule. The algorithm is
// in generators/dot.cpp, the schedules in schedules/dot_{cpu,cuda}.cpp.
#include "generators/dot.h"
#include "pipelines/generator_base.h"
#include "schedules/dot.h"

namespace hpipe {
namespace {

using namespace Halide;

// Row-major operands a(k, i), b(k, i) (Halide order) or, kColumns, column-major a(i, k), b(i, k):
// the views of transposed (N, K) arrays. Out = double (column-major only): partial results for the
// runtime, which reads few interleaved columns as many (runtime/src/dot.cpp).
template <class T, bool kColumns, class Out = T>
class BatchedDotGenerator : public FamilyGenerator<BatchedDotGenerator<T, kColumns, Out>, sched::DotKnobs> {
 public:
  GeneratorInput<Buffer<T>> a{"a", 2};
  GeneratorInput<Buffer<T>> b{"b", 2};
  GeneratorOutput<Buffer<Out>> out{"out", 1};

  void generate() {
    const alg::DotEstimates e;
    if constexpr (kColumns) {
      finish(alg::batched_dot_columns(a, b, a.dim(1).extent(), halide_type_of<Out>()), e.columns());
    } else {
      finish(alg::batched_dot(a, b, a.dim(0).extent()), e.matrix());
    }
  }

 private:
  template <class Op>
  void finish(const Op &op, const Region &operand_estimate) {
    out = op.out;
    a.set_estimates(operand_estimate);
    b.set_estimates(operand_estimate);
    out.set_estimates(alg::DotEstimates().out());
    this->schedule_with_knobs(op);
  }
};
template <class T>
using BatchedDotRowsGenerator = BatchedDotGenerator<T, false>;
template <class T>
using BatchedDotColumnsGenerator = BatchedDotGenerator<T, true>;

}  // namespace

using BatchedDotColumnsPartialF32Generator = BatchedDotGenerator<float, true, double>;

}  // namespace hpipe

HPIPE_REGISTER_GENERATOR(hpipe::BatchedDotRowsGenerator, batched_dot)
HPIPE_REGISTER_GENERATOR(hpipe::BatchedDotColumnsGenerator, batched_dot_columns)
HALIDE_REGISTER_GENERATOR(hpipe::BatchedDotColumnsPartialF32Generator, batched_dot_columns_partial_f32)
