// Runs a fuzz harness on files and folders of files (its corpus: seeds and the inputs of fixed
// defects) without libFuzzer, so that the normal test suite replays them. Fails when an input
// crashes, throws anything but the reader's own errors, or raises the peak memory past a bound
// that no input this small may need.
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size);

namespace {

constexpr long kMaxPeakMiB = 256;  // libFuzzer's -rss_limit_mb is 2048; seeds are a few hundred bytes

long peak_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss >> 10;  // KiB on Linux
}

}  // namespace

int main(int argc, char **argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; i++) {
    if (fs::is_directory(argv[i])) {
      for (const auto &e : fs::directory_iterator(argv[i]))
        if (e.is_regular_file()) inputs.push_back(e.path());
    } else {
      inputs.emplace_back(argv[i]);
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: %s FILE_OR_FOLDER...  (no inputs found)\n", argv[0]);
    return 2;
  }
  for (const fs::path &p : inputs) {
    std::ifstream in(p, std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t *>(bytes.data()), bytes.size());
    if (peak_mib() > kMaxPeakMiB) {
      std::fprintf(stderr, "%s: peak memory reached %ld MiB (bound %ld MiB) for a %zu-byte input\n", p.c_str(),
                   peak_mib(), kMaxPeakMiB, bytes.size());
      return 1;
    }
  }
  std::printf("replayed %zu inputs\n", inputs.size());
  return 0;
}
