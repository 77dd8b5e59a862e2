// The two ways the hpipe tool fails: bad usage (exit 2) and a failure doing the work (exit 1).
// Messages are one line and name the file or option at fault.
#pragma once

#include <stdexcept>

namespace hpipe::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace hpipe::cli
