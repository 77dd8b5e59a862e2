// Helpers the families' tuner entries (tools/tune/<family>_tune.cpp) share: JIT parameters with
// estimates, and case inputs on seeded random data.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tools/tune/tunable.h"

namespace hpipe::tune {

// A float32 input named as the generator's, with its estimates, bound by the cases.
inline Halide::ImageParam buffer_param(Built &built, const char *name, int dims, const Halide::Region &estimate) {
  Halide::ImageParam p(Halide::Float(32), dims, name);
  p.set_estimates(estimate);
  built.buffers.push_back(p);
  return p;
}

// An int32 scalar input named as the generator's, with its estimate.
inline Halide::Param<int> int_param(Built &built, const char *name, int estimate) {
  Halide::Param<int> p(name);
  p.set_estimate(estimate);
  built.scalars.push_back(p);
  return p;
}

// A float32 scalar input named as the generator's, with its estimate.
inline Halide::Param<float> float_param(Built &built, const char *name, float estimate) {
  Halide::Param<float> p(name);
  p.set_estimate(estimate);
  built.reals.push_back(p);
  return p;
}

inline void set_output(Built &built, Halide::Func f, const Halide::Region &estimate) {
  f.set_estimates(estimate);
  built.output = f;
}

// n values uniform in [lo, 1), each exactly representable in float32.
inline std::vector<double> random_values(std::int64_t n, std::uint32_t seed, double lo = 0.05) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, 1.0);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double &x : v) x = static_cast<float>(dist(rng));
  return v;
}

// A dense buffer input (Halide order, innermost first).
inline Arg dense(const char *name, std::vector<int> extents, std::vector<double> values) {
  Arg a{name, true, extents, {}, std::move(values)};
  int stride = 1;
  for (int e : extents) a.strides.push_back(stride), stride *= e;
  return a;
}

inline Arg int_arg(const char *name, int value) { return {name, false, {}, {}, {}, value}; }

inline Arg float_arg(const char *name, double value) {
  Arg a{name, false};
  a.is_float = true, a.real = static_cast<float>(value);
  return a;
}

}  // namespace hpipe::tune
