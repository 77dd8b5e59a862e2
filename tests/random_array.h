// Seeded random arrays, shared by the tests and the benchmarks (no GoogleTest dependency).
#pragma once

#include <cstdint>
#include <random>

#include "hpipe/view.h"

namespace hpipe::test {

// Uniform values in [lo, hi), never exactly zero when lo > 0; deterministic per seed.
template <class T, int R>
Array<T, R> random_array(const typename Array<T, R>::Extents &shape, std::uint32_t seed, double lo = 0.05,
                         double hi = 1.0) {
  Array<T, R> a(shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (std::int64_t i = 0; i < a.size(); i++) a.data()[i] = static_cast<T>(dist(rng));
  return a;
}

}  // namespace hpipe::test
