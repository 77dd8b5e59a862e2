// hpipe_bench: Google Benchmark over every kernel, plus the memory-bandwidth references measured in
// the same run: BM_stream_copy, _read, _write, _nt_copy and _nt_write (and BM_cuda_copy, the GPU's,
// where a GPU is usable). Each kernel benchmark sets its compulsory bytes, and at the end a table
// gives its bytes/s as a percentage of each reference.
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"

namespace {

// Runs body(thread, lo, hi) on hpipe's worker count of threads, each over its slice [lo, hi) of n.
template <class Body>
void on_every_thread(std::size_t n, Body body) {
  const int threads = hpipe::num_threads();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; t++) pool.emplace_back([&, t] { body(t, n * t / threads, n * (t + 1) / threads); });
  for (auto &th : pool) th.join();
}

// Passes over arrays far larger than any cache, split across hpipe's worker count of threads: STREAM
// "copy" (b[i] = a[i]) or a write (b[i] = v; v not a constant, so that the compiler cannot call
// memset, which streams), with plain stores or with streaming (non-temporal) ones. Compulsory bytes:
// each element read (copy) and written once.
// - BM_stream_copy: the reference of ops that read and write.
// - BM_stream_write: a plain store first reads the line it writes into the cache, so a write stream
//   moves as many bytes per byte counted as a copy moves per two (about 75% of copy's rate): the
//   limit of ops that mostly write with plain stores.
// - BM_stream_nt_copy, BM_stream_nt_write: streaming stores write a line without reading it; the
//   limits of the kernels whose streaming libraries write their large outputs so (exp, log, erf,
//   the CASSI cubes; docs/performance-notes.md). SSE2's 16-byte store, which every x86-64 has (the
//   64-byte one was 2% faster on Zen 5).
template <bool kCopy, bool kStreaming>
void stream_stores(benchmark::State &state) {
  const std::size_t n = std::size_t(state.range(0)) << 20 >> 2;  // range(0) MiB of floats per array
  // 16-byte aligned, as operator new aligns: whole SSE2 stores from every multiple of 4 elements.
  static std::vector<float> source, destination;
  source.assign(kCopy ? n : 0, 1.0f);
  destination.assign(n, 0.0f);
  float value = 1.0f;
  for (auto _ : state) {
    benchmark::DoNotOptimize(value);
    on_every_thread(n, [&](int, std::size_t lo, std::size_t hi) {
      float *__restrict dst = destination.data();
      const float *__restrict src = source.data();
      std::size_t i = lo;
      if constexpr (kStreaming) {
        for (; i < hi && i % 4 != 0; i++) dst[i] = kCopy ? src[i] : value;
        for (; i + 4 <= hi; i += 4) _mm_stream_ps(dst + i, kCopy ? _mm_load_ps(src + i) : _mm_set1_ps(value));
        _mm_sfence();
      }
      for (; i < hi; i++) dst[i] = kCopy ? src[i] : value;
    });
    benchmark::ClobberMemory();
  }
  hpipe::bench::set_compulsory_bytes(state, std::int64_t((kCopy ? 2 : 1) * n * sizeof(float)));
}
void BM_stream_copy(benchmark::State &state) { stream_stores<true, false>(state); }
void BM_stream_write(benchmark::State &state) { stream_stores<false, false>(state); }
void BM_stream_nt_copy(benchmark::State &state) { stream_stores<true, true>(state); }
void BM_stream_nt_write(benchmark::State &state) { stream_stores<false, true>(state); }
BENCHMARK(BM_stream_copy)->Arg(512)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_stream_write)->Arg(512)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_stream_nt_copy)->Arg(512)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_stream_nt_write)->Arg(512)->UseRealTime()->Unit(benchmark::kMillisecond);

// A one-pass read (the sum of an array far larger than any cache), the reference of reductions
// that read their input once (logsumexp). Integer words, so the compiler vectorizes the sum.
void BM_stream_read(benchmark::State &state) {
  const std::size_t n = std::size_t(state.range(0)) << 20 >> 2;  // range(0) MiB of 32-bit words
  static std::vector<std::uint32_t> a;
  a.assign(n, 1);
  std::vector<std::uint32_t> sums(hpipe::num_threads());
  for (auto _ : state) {
    on_every_thread(n, [&](int t, std::size_t lo, std::size_t hi) {
      std::uint32_t sum = 0;
      for (std::size_t i = lo; i < hi; i++) sum += a[i];
      sums[t] = sum;
    });
    benchmark::DoNotOptimize(sums.data());
  }
  hpipe::bench::set_compulsory_bytes(state, std::int64_t(n * sizeof(std::uint32_t)));
}
BENCHMARK(BM_stream_read)->Arg(512)->UseRealTime()->Unit(benchmark::kMillisecond);

struct CudaBenchmark {
  std::string name;
  hpipe::bench::BenchmarkFunction function;
  hpipe::bench::Configure configure;
};
std::vector<CudaBenchmark> &cuda_benchmarks() {
  static std::vector<CudaBenchmark> pending;
  return pending;
}

// Device-to-device copy (cuMemcpyDtoD) between two arrays far larger than the GPU's L2: the
// CUDA benchmarks' bandwidth reference. Compulsory bytes: one read and one write per byte.
void BM_cuda_copy(benchmark::State &state) {
  const std::size_t bytes = std::size_t(state.range(0)) << 20;
  hpipe::test::DeviceMemory a(nullptr, bytes), b(nullptr, bytes);
  for (auto _ : state) {
    b.copy_from(a);
    hpipe::test::synchronize_cuda();
  }
  hpipe::bench::set_compulsory_bytes(state, std::int64_t(2 * bytes));
}

bool is_cuda(const std::string &name) { return name.rfind("BM_cuda_", 0) == 0; }

// The console output, then a table of bytes/s relative to each reference of the run.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run> &runs) override {
    for (const auto &run : runs) {
      auto it = run.counters.find("bytes_per_second");
      if (it == run.counters.end() || run.error_occurred) continue;
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (median || run.run_type == Run::RT_Iteration) {
        const std::string name = run.run_name.str();
        if (median || !medians_.count(name)) rates_[name] = it->second.value;
        if (median) medians_[name] = true;
        for (auto &r : references_)
          if (name.substr(0, name.find('/')) == r.benchmark) r.rate = it->second.value;
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    bool any = false;
    for (const auto &r : references_) any = any || r.rate > 0;
    if (!any) return;
    std::printf("\n%-60s %12s", "benchmark (compulsory bytes)", "GB/s");
    for (std::size_t i = 0; i < kHostReferences; i++) std::printf(" %12s", ("% of " + references_[i].label).c_str());
    std::printf("\n");
    for (const auto &[name, rate] : rates_) {
      // CUDA benchmarks against the GPU's copy, in the copy's column; the GPU has no other reference.
      const bool cuda = is_cuda(name);
      std::printf("%-60s %12.2f", name.c_str(), rate / 1e9);
      for (std::size_t i = 0; i < kHostReferences; i++) {
        const double reference = !cuda ? references_[i].rate : i == 0 ? references_.back().rate : 0;
        reference > 0 ? std::printf(" %11.0f%%", 100.0 * rate / reference) : std::printf(" %12s", "");
      }
      std::printf("\n");
    }
    for (const auto &r : references_)
      if (r.rate > 0) std::printf("%s reference: %.2f GB/s\n", r.benchmark, r.rate / 1e9);
    std::printf("with %d threads\n", hpipe::num_threads());
  }

 private:
  struct Reference {
    const char *benchmark;
    std::string label;
    double rate;
  };
  // The host's references, one column each, then the GPU's copy, whose figures go in the copy's.
  static constexpr std::size_t kHostReferences = 5;
  std::vector<Reference> references_ = {{"BM_stream_copy", "copy", 0},         {"BM_stream_read", "read", 0},
                                        {"BM_stream_write", "write", 0},       {"BM_stream_nt_copy", "nt copy", 0},
                                        {"BM_stream_nt_write", "nt write", 0}, {"BM_cuda_copy", "GPU copy", 0}};
  std::map<std::string, double> rates_;
  std::map<std::string, bool> medians_;
};

// "<model name> (family F, model M, AVX-512)" from /proc/cpuinfo: virtual machines often show only
// the vendor's brand ("AMD EPYC"), and the family and model say which generation it is.
std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, name = "unknown CPU", family, model;
  bool avx512 = false;
  auto value = [&] { return line.substr(line.find(':') + 2); };
  while (std::getline(cpuinfo, line) && !line.empty()) {
    if (line.rfind("model name", 0) == 0) name = value();
    if (line.rfind("cpu family", 0) == 0) family = value();
    if (line.rfind("model\t", 0) == 0) model = value();
    if (line.rfind("flags", 0) == 0) avx512 = line.find(" avx512f") != std::string::npos;
  }
  return name + " (family " + family + ", model " + model + (avx512 ? ", AVX-512)" : ")");
}

}  // namespace

namespace hpipe::bench {

int register_on_both(const char *name, BenchmarkFunction cpu, BenchmarkFunction cuda, Configure configure) {
  configure(benchmark::RegisterBenchmark(name, cpu));
  cuda_benchmarks().push_back({std::string("BM_cuda_") + (name + 3), cuda, configure});  // name is BM_...
  return 0;
}

int register_cuda_only(const char *name, BenchmarkFunction cuda, Configure configure) {
  cuda_benchmarks().push_back({name, cuda, configure});
  return 0;
}

void register_cuda_benchmarks() {
  benchmark::RegisterBenchmark("BM_cuda_copy", BM_cuda_copy)->Arg(1024)->UseRealTime()->Unit(benchmark::kMillisecond);
  for (const auto &b : cuda_benchmarks()) b.configure(benchmark::RegisterBenchmark(b.name.c_str(), b.function));
}

}  // namespace hpipe::bench

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (hpipe::cuda_available())
    hpipe::bench::register_cuda_benchmarks();
  else
    std::fprintf(stderr, "CUDA benchmarks not registered: %s\n", hpipe::cuda_unavailable_reason().c_str());
  // For scripts/bench_table.py, which writes README's table from the JSON output.
  benchmark::AddCustomContext("cpu_model", cpu_model());
  benchmark::AddCustomContext("hpipe_threads", std::to_string(hpipe::num_threads()));
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
