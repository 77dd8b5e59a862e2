// The CUDA measurement bundle. There may be no GPU where the tuner runs: `hpipe-tune bundle`
// compiles every CUDA variant ahead of time (the same schedule functions the AOT build uses) into
// one executable with the Halide runtime, the verification data and the driver
// (bundle_main.cpp). On a GPU host that has only the NVIDIA driver, the bundle verifies and times
// every variant and writes JSON-line records; `hpipe-tune import` appends them to the database.
#pragma once

#include <string>
#include <vector>

#include "tools/tune/tunable.h"

namespace hpipe::tune {

struct BundleOptions {
  std::string dir;               // output directory; the executable is <dir>/hpipe-tune-bundle
  std::vector<std::string> ops;  // empty: every registered op
  int max_variants = 64;         // CUDA knob variants per op (the default included)
  int jobs = 2;                  // variants compiled in parallel
  Size size = Size::workload;    // the timing problem
  std::string target;            // empty: HPIPE_CUDA_TARGET of the build
  bool inject_wrong = false;     // test: a deliberately wrong variant per op
  std::uint32_t seed = 1;
};

int make_bundle(const BundleOptions &options);
int import_results(const std::string &results, const std::string &db);

}  // namespace hpipe::tune
