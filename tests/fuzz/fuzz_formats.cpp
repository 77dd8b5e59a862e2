// libFuzzer harness for the readers of tools/hpipe/formats.h: MATLAB, HDF5, TIFF (told apart by their
// magic) and ENVI. matio, libhdf5 and libtiff open files by path, so the input is written to a file
// first; an input that starts with "ENVI" is a header and its data, split at the first NUL byte.
// Any bytes either read or fail with the tool's own error.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "errors.h"
#include "formats.h"

namespace {

// A folder of this process's own, for the files each input is written to.
const std::string &scratch() {
  static const std::string dir = [] {
    std::string t = "/tmp/hpipe_fuzz_formats_XXXXXX";
    if (!mkdtemp(t.data())) std::abort();
    return t;
  }();
  return dir;
}

void write(const std::string &path, const std::uint8_t *data, std::size_t size) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char *>(data), size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  using namespace hpipe::cli;
  std::string spec = scratch() + "/input";
  const std::uint8_t *end = data + size, *nul = std::find(data, end, std::uint8_t(0));
  if (size >= 4 && std::string(data, data + 4) == "ENVI" && nul != end) {
    spec = scratch() + "/cube.hdr";
    write(spec, data, nul - data);
    write(scratch() + "/cube.img", nul + 1, end - nul - 1);
  } else {
    write(spec, data, size);
  }
  try {
    read_other_format(spec);
  } catch (const Failure &) {
  } catch (const UsageError &) {}
  return 0;
}
