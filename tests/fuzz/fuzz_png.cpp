// libFuzzer harness for the PNG reader: any bytes either read or fail with a Failure, within the
// memory and time their size accounts for.
#include <cstdint>
#include <vector>

#include "errors.h"
#include "io_png.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  using namespace hpipe::cli;
  try {
    InputFile in("fuzz.png", std::vector<unsigned char>(data, data + size));
    read_png(in);
  } catch (const Failure &) {}
  return 0;
}
