// Schedule knobs: plain structs of integers that a schedule function reads.
//
// Each knob struct lists its knobs in `visit(f)`, calling f(name, value&, candidates) for each one,
// and says which combinations are legal in `valid()`. The AOT generators read knobs from a
// "name:value,..." string (GeneratorParam `knobs`; Halide's generator driver takes one '=' per
// parameter, so knobs use ':'); the autotuner enumerates the candidates.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace hpipe::sched {

using Candidates = std::vector<int>;

// The knobs of `Knobs` that the schedule of the family op `Op` never reads, as "a,b": the autotuner
// holds them at their defaults instead of searching them. Specialize beside the knob struct.
template <class Knobs, class Op>
struct UnusedKnobs {
  static constexpr const char *names = "";
};

template <class Knobs>
std::string format_knobs(Knobs knobs) {
  std::ostringstream out;
  const char *sep = "";
  knobs.visit([&](const char *name, int &value, const Candidates &) {
    out << sep << name << ":" << value;
    sep = ",";
  });
  return out.str();
}

// Parses "a:1,b:2" over the defaults of Knobs; unknown names and non-integers are errors. "a=1"
// is accepted too, but the build passes knobs with ':' (Halide's generator command line rejects a
// second '=' in `knobs=...`).
template <class Knobs>
Knobs parse_knobs(const std::string &text) {
  Knobs knobs;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find_first_of("=:");
    if (eq == std::string::npos) throw std::invalid_argument("knob '" + item + "' is not name:value");
    const std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    bool found = false;
    knobs.visit([&](const char *knob, int &slot, const Candidates &) {
      if (name != knob) return;
      found = true;
      std::size_t used = 0;
      try {
        slot = std::stoi(value, &used);
      } catch (const std::exception &) {
        used = 0;
      }
      if (used != value.size() || value.empty())
        throw std::invalid_argument("knob '" + name + "' needs an integer, got '" + value + "'");
    });
    if (!found) {
      std::string known;
      knobs.visit([&](const char *knob, int &, const Candidates &) { known += std::string(" ") + knob; });
      throw std::invalid_argument("unknown knob '" + name + "' (known:" + known + ")");
    }
  }
  if (!knobs.valid()) throw std::invalid_argument("knobs '" + text + "' are not a legal combination");
  return knobs;
}

}  // namespace hpipe::sched
