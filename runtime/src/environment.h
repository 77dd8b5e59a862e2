// hpipe's own environment variables, read once. A value that is set but not one the variable
// takes fails every call, naming the variable (a typo went unnoticed: HPIPE_CPU_LIMIT=AVX2 capped
// nothing, and a huge HPIPE_SPIN_US overflowed the pool's clock arithmetic).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hpipe/device.h"

namespace hpipe::detail {

struct Environment {
  std::optional<std::int64_t> spin_us;           // HPIPE_SPIN_US, 0 .. kMostSpinMicros
  std::optional<std::int64_t> streaming_bytes;   // HPIPE_STREAMING_BYTES, >= 0
  std::optional<std::int64_t> batch_part_bytes;  // HPIPE_BATCH_PART_BYTES, >= 1
  CpuLimit cpu_limit = CpuLimit::none;           // HPIPE_CPU_LIMIT, avx2 | sse41
  // The first variable set to what it does not take ("" when none): its name and the message.
  std::string bad_variable, problem;
};

// The longest idle workers spin (HPIPE_SPIN_US): a second.
constexpr std::int64_t kMostSpinMicros = 1000000;

// Read at the first use, a Call's (an empty value counts as unset). Every Call checks `problem`.
const Environment &environment();

// The CPU workers a process runs by default, as Halide reads HL_NUM_THREADS: its atoi() when that
// is > 0, capped at kMostThreads; otherwise (unset, 0, negative, not a number) the number of cores.
// Read on every call (hardware_concurrency() reads /sys): callers keep the value. The runtime and
// hpipe-tune, which times variants on the library's threads, both use it.
int default_thread_count();

}  // namespace hpipe::detail
