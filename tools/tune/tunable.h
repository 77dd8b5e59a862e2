// The registry of tunable ops: what hpipe-tune needs to know about an op, contributed by its family
// in one small file (tools/tune/<family>_tune.cpp, see cassi_tune.cpp and docs/tuning.md).
//
// An op is tuned as float32 (the workload type); the knobs it wins apply to every element type of
// the kernel (HPIPE_KNOBS_<op>_<backend>).
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "Halide.h"
#include "schedules/common.h"
#include "tests/reference/tolerances.h"

namespace hpipe::tune {

// One input of a case, bound by name to the variant's JIT parameter (or, in the CUDA bundle, to its
// AOT argument). Buffers are float32, Halide order (innermost first); `strides` may hold 0 (a
// broadcast dimension) and `values` is the storage they address. Scalars are int32 or float32.
struct Arg {
  std::string name;
  bool is_buffer = true;
  std::vector<int> extents, strides;
  std::vector<double> values;
  int scalar = 0;         // when !is_buffer && !is_float: an int32 scalar
  bool is_float = false;  // when !is_buffer: a float32 scalar, `real`
  float real = 0;
};

// One problem on random data: the inputs, the output's extents and the reference output computed
// in double precision by plain loops (tests/reference/).
struct Case {
  std::string shape;  // e.g. "B=16,C=28,H=256,W=256,S=2,axis=w"
  std::vector<Arg> inputs;
  std::string output_name;
  std::vector<int> output_extents;
  int output_count = 1;                        // > 1: a Tuple output, each element of output_extents
  std::vector<std::vector<int>> more_outputs;  // extents of Built::more_outputs
  std::vector<double> expected;                // every output buffer's values, one buffer after another

  // The extents of every output buffer, in the pipeline's order: the Tuple elements of the output,
  // then the further outputs.
  std::vector<std::vector<int>> output_buffers() const {
    std::vector<std::vector<int>> all(output_count, output_extents);
    all.insert(all.end(), more_outputs.begin(), more_outputs.end());
    return all;
  }
};

// |actual - expected| <= abs + rel * |expected|, per element; each op's from tests/reference/tolerances.h.
using tolerance::Tolerance;

// A backend's knob space, read from a knob struct's visit() and valid() (schedules/knobs.h).
struct KnobSpace {
  std::vector<std::string> names;
  std::vector<sched::Candidates> candidates;
  std::string defaults;                            // "a:1,b:2", the C++ defaults
  std::function<bool(const std::string &)> valid;  // parses and checks a "a:1,b:2" text
  // Why a knob text (of a record, read from a file) is not one of this space's, "" when it is:
  // not name:value (or name=value) items joined by single commas, a knob given twice, an unknown
  // knob, a value that is not an integer, or an illegal combination (valid()).
  std::function<std::string(const std::string &)> problem;
};

// The syntax the tuner writes, which sched::split_knobs reads more leniently (blanks, empty
// items, repeats): "" when `text` keeps to it, else why not.
inline std::string knob_syntax_problem(const std::string &text) {
  if (text.empty()) return "";  // every knob at its default
  std::vector<std::string> names;
  std::size_t from = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', from), text.size());
    const std::string item = text.substr(from, comma - from);
    const std::size_t eq = item.find_first_of(":=");
    const auto is_name = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    const auto is_digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
    const std::string name = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    const std::string digits = value.substr(!value.empty() && value[0] == '-');
    if (item.empty()) return "an empty knob (two commas, or one at an end) in '" + text + "'";
    if (eq == std::string::npos || name.empty() || !std::all_of(name.begin(), name.end(), is_name) || digits.empty() ||
        !std::all_of(digits.begin(), digits.end(), is_digit))
      return "knob '" + item + "' is not name:value with an integer value";
    if (std::find(names.begin(), names.end(), name) != names.end()) return "knob '" + name + "' is given twice";
    names.push_back(name);
    if (comma == text.size()) return "";
    from = comma + 1;
  }
}

// The knobs of `Knobs` as the schedule of `Op` reads them, from the op's defaults
// (sched::OpKnobDefaults): a knob it never reads (sched::UnusedKnobs) has its default as its only
// candidate.
template <class Knobs, class Op>
KnobSpace knob_space() {
  KnobSpace space;
  Knobs knobs = sched::OpKnobDefaults<Knobs, Op>::get();
  const std::string unused = std::string(",") + sched::UnusedKnobs<Knobs, Op>::names + ",";
  knobs.visit([&](const char *name, int &value, const sched::Candidates &candidates) {
    space.names.push_back(name);
    const bool used = unused.find(std::string(",") + name + ",") == std::string::npos;
    space.candidates.push_back(used ? candidates : sched::Candidates{value});
  });
  space.defaults = sched::format_knobs(knobs);
  space.problem = [](const std::string &text) -> std::string {
    if (std::string syntax = knob_syntax_problem(text); !syntax.empty()) return syntax;
    try {
      sched::parse_knobs<Knobs>(text);
      return "";
    } catch (const std::invalid_argument &e) {
      return e.what();
    }
  };
  space.valid = [problem = space.problem](const std::string &text) { return problem(text).empty(); };
  return space;
}

// The JIT pipeline of one variant: its output and the parameters a case binds by name.
struct Built {
  Halide::Target target;                   // what the variant is compiled for (algorithms may depend on it)
  Halide::Func output;                     // one float32 value, or a Tuple of them (Case::output_count)
  std::vector<Halide::Func> more_outputs;  // further outputs of the pipeline (single-valued)

  sched::LoweringPasses passes;  // that the schedule asks for

  Halide::Pipeline pipeline() const {
    std::vector<Halide::Func> all{output};
    all.insert(all.end(), more_outputs.begin(), more_outputs.end());
    Halide::Pipeline p(all);
    sched::add_lowering_passes(p, passes);
    return p;
  }
  std::vector<Halide::ImageParam> buffers;
  std::vector<Halide::Param<int>> scalars;
  std::vector<Halide::Param<float>> reals;
};

enum class Size { small, workload };

struct TunableOp {
  std::string name;     // the kernel's name in hpipe_add_family(), e.g. cassi_forward
  KnobSpace cpu, cuda;  // from sched::<Family>Knobs::Cpu / ::Cuda
  // The algorithm on fresh float32 JIT parameters, estimates set; scheduled with `knobs`
  // ("a:1,b:2", CPU or CUDA schedule by the target's features) or, when `knobs` is null, left
  // unscheduled for an autoscheduler. Bad knobs throw std::invalid_argument.
  std::function<Built(const Halide::Target &, const std::string *knobs)> build;
  // The timing case first, then verification cases (odd sizes, other dispersions).
  std::function<std::vector<Case>(Size, std::uint32_t seed)> cases;
  Tolerance tolerance;
};

// Makes an op entry from a family's algorithm: `algorithm(built)` creates the JIT parameters in
// `built`, sets their estimates, sets `built.output` and returns the family's Op struct, which is
// then scheduled by sched::apply_knobs<Knobs> (the generators' path).
template <class Knobs, class Op>
TunableOp make_op(std::string name, std::function<Op(Built &)> algorithm,
                  std::function<std::vector<Case>(Size, std::uint32_t)> cases, Tolerance tolerance) {
  TunableOp op;
  op.name = std::move(name);
  op.cpu = knob_space<typename Knobs::Cpu, Op>();
  op.cuda = knob_space<typename Knobs::Cuda, Op>();
  op.build = [algorithm](const Halide::Target &target, const std::string *knobs) {
    Built built;
    built.target = target;
    const Op scheduled = algorithm(built);
    if (knobs) built.passes = sched::apply_knobs<Knobs>(scheduled, target, *knobs);
    return built;
  };
  op.cases = std::move(cases);
  op.tolerance = tolerance;
  return op;
}

// Every registered op, in registration order.
std::vector<TunableOp> &registry();

struct Registrar {
  explicit Registrar(std::vector<TunableOp> (*family)());
};

}  // namespace hpipe::tune

// In a family's tools/tune/<family>_tune.cpp: HPIPE_TUNE_FAMILY(cassi) { return {make_op<...>(...), ...}; }
#define HPIPE_TUNE_FAMILY(NAME)                                                                 \
  static std::vector<::hpipe::tune::TunableOp> hpipe_tune_family_##NAME();                      \
  static const ::hpipe::tune::Registrar hpipe_tune_registrar_##NAME(&hpipe_tune_family_##NAME); \
  static std::vector<::hpipe::tune::TunableOp> hpipe_tune_family_##NAME()
