// The batched 1-D convolution's entry in the tuner registry: conv1d, its cases and tolerance. The
// algorithm, estimates and knob structs are the generator's own (pipelines/conv1d_generators.cpp).
#include <sstream>

#include "generators/conv1d.h"
#include "schedules/conv1d.h"
#include "tests/reference/conv1d_reference.h"
#include "tools/tune/case_util.h"

namespace hpipe::tune {
namespace {

using namespace Halide;

struct Problem {
  int n, la, lv;  // la >= lv: the runtime passes the longer operand as the signal
  const char *mode;
  bool shared;
};

// The timing problem first: W3's large batch (10^5 rows, 9 x 7, full, per-row kernels), or 1000
// rows for CI; then the other modes, a shared kernel (row stride 0), a generic tap count (> 9)
// and length 1.
std::vector<Problem> problems(Size size) {
  std::vector<Problem> list{{size == Size::workload ? 100000 : 1000, 9, 7, "full", false}};
  list.insert(
      list.end(),
      {{3, 17, 5, "same", true}, {2, 13, 10, "valid", false}, {5, 9, 6, "full", true}, {1, 1, 1, "full", false}});
  return list;
}

// tests/test_conv1d.cpp's tolerance for inputs in [0.05, 1): m + 2 roundings relative to the
// result, m = min(La, Lv) products per output; m <= 10 in the cases.
constexpr int kMostProducts = 10;
const Tolerance kConvTolerance = tolerance::conv1d_positive<float>(kMostProducts);

Case make_case(const Problem &p, std::uint32_t seed) {
  // np.convolve's output length and, as runtime/src/conv1d.cpp passes it, its first element in the
  // full convolution.
  const std::string mode = p.mode;
  const int lo = mode == "full" ? p.la + p.lv - 1 : mode == "same" ? p.la : p.la - p.lv + 1;
  const int offset = mode == "full" ? 0 : mode == "same" ? (p.lv - 1) / 2 : p.lv - 1;
  const auto signal = random_values(std::int64_t(p.n) * p.la, seed);
  const auto kernel = random_values(std::int64_t(p.shared ? 1 : p.n) * p.lv, seed + 1);
  Case c;
  std::ostringstream shape;
  shape << "N=" << p.n << ",La=" << p.la << ",Lv=" << p.lv << ",mode=" << p.mode
        << ",kernel=" << (p.shared ? "shared" : "per_row");
  c.shape = shape.str();
  Arg kernel_arg = dense("kernel", {p.lv, p.n}, kernel);
  if (p.shared) kernel_arg.strides[1] = 0;
  c.inputs = {dense("signal", {p.la, p.n}, signal), kernel_arg, int_arg("offset", offset)};
  c.output_name = "out", c.output_extents = {lo, p.n};
  c.expected = reference::batched_convolve(signal, kernel, p.n, p.la, p.lv, p.shared, p.mode);
  return c;
}

}  // namespace

HPIPE_TUNE_FAMILY(conv1d) {
  std::function<alg::Conv1d(Built &)> conv = [](Built &built) {
    const alg::Conv1dEstimates e;
    ImageParam signal = buffer_param(built, "signal", 2, e.signal_region());
    ImageParam kernel = buffer_param(built, "kernel", 2, e.kernel_region());
    Param<int> offset = int_param(built, "offset", 0);
    auto op = alg::conv1d(signal, signal.dim(0).extent(), kernel, kernel.dim(0).extent(), offset,
                          alg::conv1d_form(built.target));
    set_output(built, op.out, e.out());
    return op;
  };
  auto cases = [](Size size, std::uint32_t seed) {
    std::vector<Case> list;
    for (const Problem &p : problems(size)) list.push_back(make_case(p, seed += 10));
    return list;
  };
  return {make_op<sched::Conv1dKnobs, alg::Conv1d>("conv1d", conv, cases, kConvTolerance)};
}

}  // namespace hpipe::tune
