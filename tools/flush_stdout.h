// The exit status once standard output is flushed, shared by the hpipe tool and hpipe-tune: output
// that did not arrive (a full disk, a closed pipe) is an error, never a silent success.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

namespace hpipe::tools {

// `status` when everything written to stdout (std::cout shares its buffer) arrived; otherwise a
// line "PROGRAM: error: cannot write to standard output" on stderr and status 1 (or `status` when
// that already says a failure).
inline int flush_stdout(const char *program, int status) {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  if (flushed && !std::ferror(stdout) && std::cout.good()) return status;
  const std::string why = !flushed && errno != 0 ? std::string(": ") + std::strerror(errno) : "";
  std::fprintf(stderr, "%s: error: cannot write to standard output%s\n", program, why.c_str());
  return status != 0 ? status : 1;
}

}  // namespace hpipe::tools
