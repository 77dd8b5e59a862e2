// Helpers the algorithms share.
#pragma once

#include <string>

#include "Halide.h"

namespace hpipe::alg {

// Element type of a single-valued Func.
inline Halide::Type value_type(const Halide::Func &f) { return f.output_types().at(0); }

// The name of the buffer an input's Func reads (an ImageParam's or a generator input's Func is a
// call to it under another name), for lowering passes that look for that buffer's loads; f's own
// name for any other Func.
inline std::string input_buffer_name(const Halide::Func &f) {
  if (f.defined() && f.outputs() == 1) {
    const auto *call = f.value().as<Halide::Internal::Call>();
    if (call && call->call_type == Halide::Internal::Call::Image) return call->name;
  }
  return f.name();
}

}  // namespace hpipe::alg
