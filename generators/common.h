// Helpers the algorithms share.
#pragma once

#include "Halide.h"

namespace hpipe::alg {

// Element type of a single-valued Func.
inline Halide::Type value_type(const Halide::Func &f) { return f.output_types().at(0); }

}  // namespace hpipe::alg
