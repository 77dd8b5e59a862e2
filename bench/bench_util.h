// Helpers shared by the benchmarks.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>

#include "hpipe/hpipe.h"
#include "random_array.h"

namespace hpipe::bench {

// Compulsory traffic of one iteration: every input read once, every output written once.
inline void set_compulsory_bytes(benchmark::State &state, std::int64_t bytes_per_iteration) {
  state.SetBytesProcessed(state.iterations() * bytes_per_iteration);
}

using test::random_array;

template <class A>
std::int64_t bytes_of(const A &a) {
  return a.size() * static_cast<std::int64_t>(sizeof(*a.data()));
}

}  // namespace hpipe::bench
