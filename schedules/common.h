// Helpers every schedule uses.
#pragma once

#include "generators/common.h"

namespace hpipe::sched {

using alg::value_type;

// Lanes of one vector of `type` on `target`, times `factor` (unrolled vectors per step).
inline int vector_lanes(const Halide::Target &target, const Halide::Type &type, int factor) {
  return target.natural_vector_size(type) * factor;
}

// The i-th pure argument of a Func, for schedules that address the algorithm's Vars.
inline Halide::Var arg(const Halide::Func &f, int i) { return f.args().at(i); }

}  // namespace hpipe::sched
