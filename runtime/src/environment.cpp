#include "environment.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <thread>

namespace hpipe::detail {

namespace {

const char *set_value(const char *name) {
  const char *v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// A whole number of decimal digits within [least, most], else the problem noted.
std::optional<std::int64_t> whole_number(Environment &e, const char *name, std::int64_t least, std::int64_t most) {
  const char *text = set_value(name);
  if (!text) return std::nullopt;
  std::int64_t n = 0;
  bool ok = true;
  for (const char *p = text; *p && ok; p++)
    ok = *p >= '0' && *p <= '9' && !__builtin_mul_overflow(n, 10, &n) && !__builtin_add_overflow(n, *p - '0', &n);
  if (ok && n >= least && n <= most) return n;
  if (e.problem.empty()) {
    e.bad_variable = name;
    e.problem = "expected a whole number from " + std::to_string(least) +
                (most == std::numeric_limits<std::int64_t>::max() ? " up" : " to " + std::to_string(most)) +
                " (or unset), got '" + text + "'";
  }
  return std::nullopt;
}

}  // namespace

const Environment &environment() {
  static const Environment e = [] {
    Environment e;
    constexpr std::int64_t kMost = std::numeric_limits<std::int64_t>::max();
    e.spin_us = whole_number(e, "HPIPE_SPIN_US", 0, kMostSpinMicros);
    e.streaming_bytes = whole_number(e, "HPIPE_STREAMING_BYTES", 0, kMost);
    e.batch_part_bytes = whole_number(e, "HPIPE_BATCH_PART_BYTES", 1, kMost);
    if (const char *limit = set_value("HPIPE_CPU_LIMIT")) {
      const std::string v = limit;
      if (v == "avx2") {
        e.cpu_limit = CpuLimit::avx2;
      } else if (v == "sse41") {
        e.cpu_limit = CpuLimit::sse41;
      } else if (e.problem.empty()) {
        e.bad_variable = "HPIPE_CPU_LIMIT";
        e.problem = "expected avx2 or sse41 (or unset), got '" + v + "'";
      }
    }
    return e;
  }();
  return e;
}

int default_thread_count() {
  if (const char *env = std::getenv("HL_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return std::min(n, kMostThreads);
  }
  const unsigned cores = std::thread::hardware_concurrency();
  return cores ? static_cast<int>(cores) : 1;
}

}  // namespace hpipe::detail
