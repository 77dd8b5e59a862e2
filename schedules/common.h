// Helpers every schedule uses.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "generators/common.h"
#include "schedules/knobs.h"

namespace hpipe::sched {

using alg::value_type;

// Lanes of one vector of `type` on `target`, times `factor` (unrolled vectors per step).
inline int vector_lanes(const Halide::Target &target, const Halide::Type &type, int factor) {
  return target.natural_vector_size(type) * factor;
}

// The i-th pure argument of a Func, for schedules that address the algorithm's Vars.
inline Halide::Var arg(const Halide::Func &f, int i) { return f.args().at(i); }

// Lowering passes a schedule needs besides its directives (schedules/prefetch.h), for the pipeline
// that compiles the op to add.
using LoweringPasses = std::vector<std::shared_ptr<Halide::Internal::IRMutator>>;

// The CPU schedules of most ops need none; an op's schedule that does overloads this.
template <class Op, class CpuKnobs>
LoweringPasses cpu_lowering_passes(const Op &, const Halide::Target &, const CpuKnobs &) {
  return {};
}

// Schedules `op` with its family's knobs: the CUDA schedule when the target has CUDA, the CPU one
// otherwise. `Knobs` names the knob structs (Knobs::Cpu, Knobs::Cuda); `text` ("a=1,b=2") overrides
// the op's defaults (OpKnobDefaults) and bad knobs throw std::invalid_argument. Returns the
// lowering passes the pipeline must add. The AOT generators and the autotuner (tools/tune) both
// schedule through here, so what is tuned is what ships.
template <class Knobs, class Op>
LoweringPasses apply_knobs(const Op &op, const Halide::Target &target, const std::string &text) {
  if (target.has_feature(Halide::Target::CUDA)) {
    using Cuda = typename Knobs::Cuda;
    schedule_cuda(op, target, parse_knobs<Cuda>(text, OpKnobDefaults<Cuda, Op>::get()));
    return {};
  }
  using Cpu = typename Knobs::Cpu;
  const auto knobs = parse_knobs<Cpu>(text, OpKnobDefaults<Cpu, Op>::get());
  schedule_cpu(op, target, knobs);
  return cpu_lowering_passes(op, target, knobs);
}

// Adds `passes` to `pipeline`, which keeps them alive.
inline void add_lowering_passes(Halide::Pipeline pipeline, const LoweringPasses &passes) {
  for (const auto &pass : passes) pipeline.add_custom_lowering_pass(pass.get(), [keep = pass] {});
}

// f(w, h, rest...) as a CUDA grid: blocks of block_w x block_h threads over (w, h), every further
// dimension fused into the third block dimension. Returns the innermost thread loop.
inline Halide::Var gpu_tile_image(Halide::Func f, int block_w, int block_h) {
  Halide::Var wo("wo"), ho("ho"), wi("wi"), hi("hi");
  f.gpu_tile(arg(f, 0), arg(f, 1), wo, ho, wi, hi, block_w, block_h, Halide::TailStrategy::GuardWithIf);
  if (f.dimensions() > 2) {
    Halide::Var rest = arg(f, 2);
    for (int d = 3; d < f.dimensions(); d++) {
      Halide::Var fused("fused_" + std::to_string(d));
      f.fuse(rest, arg(f, d), fused);
      rest = fused;
    }
    f.gpu_blocks(rest);
  }
  return wi;
}

}  // namespace hpipe::sched
