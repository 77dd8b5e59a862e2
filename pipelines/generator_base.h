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

// The base of a generator `Self` of the op family whose knob structs `Knobs` names (Knobs::Cpu,
// Knobs::Cuda): `knobs` ("name:value,...") overrides their defaults.
template <class Self, class Knobs>
class FamilyGenerator : public Halide::Generator<Self> {
 public:
  Halide::GeneratorParam<std::string> knobs{"knobs", ""};
  // Set by the build for a kernel's streaming library (cmake/streaming_stores.py): the generator
  // then declares its streamed outputs 64-byte aligned (align_streamed_output).
  Halide::GeneratorParam<bool> streaming_output{"streaming_output", false};

 protected:
  // For the streaming library: `out`'s host pointer and its strides past the innermost 64-byte
  // aligned, so that Halide proves the stores of whole vectors aligned and the build can mark
  // them; Call runs that library only with such outputs.
  template <class T, class Output>
  void align_streamed_output(Output &out) {
    if (!streaming_output) return;
    out.set_host_alignment(64);
    const int lanes = 64 / int(sizeof(T));
    out.dim(0).set_min(0);
    for (int d = 1; d < out.dimensions(); d++) out.dim(d).set_stride(out.dim(d).stride() / lanes * lanes);
  }

  // Applies the family's CUDA schedule when the target has CUDA, its CPU schedule otherwise, and
  // the lowering passes the schedule asks for. Call it once the outputs are defined.
  template <class Op>
  void schedule_with_knobs(const Op &op) {
    try {
      const auto passes = sched::apply_knobs<Knobs>(op, this->get_target(), knobs);
      if (!passes.empty()) sched::add_lowering_passes(this->get_pipeline(), passes);
    } catch (const std::invalid_argument &e) {
      // Generators run at build time: a bad knob stops the build with the reason.
      std::cerr << "hpipe generator: bad knobs: " << e.what() << "\n";
      std::exit(1);
    }
  }
};

}  // namespace hpipe

// Registers GEN<float> as NAME_f32 and GEN<double> as NAME_f64.
#define HPIPE_REGISTER_GENERATOR(GEN, NAME)         \
  HALIDE_REGISTER_GENERATOR(GEN<float>, NAME##_f32) \
  HALIDE_REGISTER_GENERATOR(GEN<double>, NAME##_f64)
