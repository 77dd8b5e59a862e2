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

// The defaults of `Knobs` for the family op `Op`: the struct's own, unless the family specializes
// this beside the knob struct for an op whose measured best differs from the family's. The
// generators and the tuner start from these, so a knob text overrides them as it does the struct's.
template <class Knobs, class Op>
struct OpKnobDefaults {
  static Knobs get() { return Knobs{}; }
};

// One "name:value" item of a knob text.
struct KnobSetting {
  std::string name;
  int value = 0;
};

// The one reader of knob texts: the items of "a:1,b:2", in order. "a=1" is accepted too, but the
// build passes knobs with ':' (Halide's generator command line rejects a second '=' in
// `knobs=...`). An item that is not name:value with an integer value throws std::invalid_argument.
inline std::vector<KnobSetting> split_knobs(const std::string &text) {
  std::vector<KnobSetting> settings;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find_first_of("=:");
    if (eq == std::string::npos) throw std::invalid_argument("knob '" + item + "' is not name:value");
    const std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    std::size_t used = 0;
    int number = 0;
    try {
      number = std::stoi(value, &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (used != value.size() || value.empty())
      throw std::invalid_argument("knob '" + name + "' needs an integer, got '" + value + "'");
    settings.push_back({name, number});
  }
  return settings;
}

// The one writer: "a:1,b:2".
inline std::string join_knobs(const std::vector<KnobSetting> &settings) {
  std::string text;
  for (const auto &s : settings) text += (text.empty() ? "" : ",") + s.name + ":" + std::to_string(s.value);
  return text;
}

template <class Knobs>
std::string format_knobs(Knobs knobs) {
  std::vector<KnobSetting> settings;
  knobs.visit([&](const char *name, int &value, const Candidates &) { settings.push_back({name, value}); });
  return join_knobs(settings);
}

// Parses a knob text over `knobs` (by default the struct's defaults); unknown names, non-integers
// and illegal combinations are errors.
template <class Knobs>
Knobs parse_knobs(const std::string &text, Knobs knobs = Knobs{}) {
  for (const KnobSetting &setting : split_knobs(text)) {
    bool found = false;
    knobs.visit([&](const char *knob, int &slot, const Candidates &) {
      if (setting.name != knob) return;
      found = true;
      slot = setting.value;
    });
    if (!found) {
      std::string known;
      knobs.visit([&](const char *knob, int &, const Candidates &) { known += std::string(" ") + knob; });
      throw std::invalid_argument("unknown knob '" + setting.name + "' (known:" + known + ")");
    }
  }
  if (!knobs.valid()) throw std::invalid_argument("knobs '" + text + "' are not a legal combination");
  return knobs;
}

}  // namespace hpipe::sched
