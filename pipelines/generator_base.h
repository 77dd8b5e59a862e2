// What every hpipe generator shares: the `knobs` GeneratorParam, the choice between the CPU and
// the CUDA schedule by target, and one registration per element type.
#pragma once

#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>

#include "Halide.h"
#include "schedules/common.h"

namespace hpipe {

// Applies the op family's CUDA schedule when the target has CUDA, its CPU schedule otherwise.
// `Knobs` names the family's knob structs (Knobs::Cpu, Knobs::Cuda); `text` overrides defaults.
template <class Knobs, class Op>
void apply_schedule(const Op &op, const Halide::Target &target, const std::string &text) {
  try {
    sched::apply_knobs<Knobs>(op, target, text);
  } catch (const std::invalid_argument &e) {
    // Generators run at build time: a bad knob stops the build with the reason.
    std::cerr << "hpipe generator: bad knobs: " << e.what() << "\n";
    std::exit(1);
  }
}

}  // namespace hpipe

// Registers GEN<float> as NAME_f32 and GEN<double> as NAME_f64.
#define HPIPE_REGISTER_GENERATOR(GEN, NAME)           \
  HALIDE_REGISTER_GENERATOR(GEN<float>, NAME##_f32)   \
  HALIDE_REGISTER_GENERATOR(GEN<double>, NAME##_f64)
