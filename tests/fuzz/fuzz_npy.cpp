// libFuzzer harness for the .npy reader, and what a header's shape makes the writer plan: any
// bytes either read or fail with a Failure, within the memory and time their size accounts for.
#include <cstdint>
#include <vector>

#include "errors.h"
#include "io_npy.h"
#include "stack.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  using namespace hpipe::cli;
  try {
    InputFile in("fuzz.npy", std::vector<unsigned char>(data, data + size));
    const RawArray a = read_npy(in);
    plan_output("out/b_%d.npy", a.shape);  // one file name per plane: bounded by the data read
  } catch (const Failure &) {
  } catch (const UsageError &) {}
  return 0;
}
