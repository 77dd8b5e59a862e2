// Helpers shared by the benchmarks.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>

#include "hpipe/hpipe.h"

namespace hpipe::bench {

// Compulsory traffic of one iteration: every input read once, every output written once.
inline void set_compulsory_bytes(benchmark::State &state, std::int64_t bytes_per_iteration) {
  state.SetBytesProcessed(state.iterations() * bytes_per_iteration);
}

template <class T, int R>
Array<T, R> random_array(const typename Array<T, R>::Extents &shape, std::uint32_t seed, double lo = 0.05,
                         double hi = 1.0) {
  Array<T, R> a(shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (std::int64_t i = 0; i < a.size(); i++) a.data()[i] = static_cast<T>(dist(rng));
  return a;
}

template <class A>
std::int64_t bytes_of(const A &a) {
  return a.size() * static_cast<std::int64_t>(sizeof(*a.data()));
}

}  // namespace hpipe::bench
