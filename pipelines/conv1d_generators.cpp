// AOT generator of the batched 1-D convolution: inputs/outputs, estimates, schedule. The
// algorithm is in generators/conv1d.cpp, the schedules in schedules/conv1d_{cpu,cuda}.cpp.
//
// The kernel input is 2-D (j, i); the runtime passes one shared kernel with a row stride of 0,
// and passes the longer operand as the signal. The output length is the output buffer's extent.
#include "generators/conv1d.h"
#include "pipelines/generator_base.h"
#include "schedules/conv1d.h"

namespace hpipe {
namespace {

using namespace Halide;

template <class T>
class Conv1dGenerator : public FamilyGenerator<Conv1dGenerator<T>, sched::Conv1dKnobs> {
 public:
  GeneratorInput<Buffer<T>> signal{"signal", 2};
  GeneratorInput<Buffer<T>> kernel{"kernel", 2};
  GeneratorInput<int> offset{"offset"};  // first element of the full convolution in `out`
  GeneratorOutput<Buffer<T>> out{"out", 2};

  void generate() {
    auto op = alg::conv1d(signal, signal.dim(0).extent(), kernel, kernel.dim(0).extent(), offset,
                          alg::conv1d_form(this->get_target()));
    out = op.out;
    const alg::Conv1dEstimates e;
    signal.set_estimates(e.signal_region());
    kernel.set_estimates(e.kernel_region());
    offset.set_estimate(0);
    out.set_estimates(e.out());
    this->schedule_with_knobs(op);
  }
};

}  // namespace
}  // namespace hpipe

HPIPE_REGISTER_GENERATOR(hpipe::Conv1dGenerator, conv1d)
