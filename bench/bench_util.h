// Helpers shared by the benchmarks.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <memory>

#include "cuda_memory.h"
#include "hpipe/hpipe.h"
#include "random_array.h"

namespace hpipe::bench {

// Compulsory traffic of one iteration: every input read once, every output written once.
inline void set_compulsory_bytes(benchmark::State &state, std::int64_t bytes_per_iteration) {
  state.SetBytesProcessed(state.iterations() * bytes_per_iteration);
}

using test::random_array;

template <class A>
std::int64_t bytes_of(const A &a) {
  return a.size() * static_cast<std::int64_t>(sizeof(*a.data()));
}

// An array where the kernels of `device` read and write it: the host array itself for the CPU, a
// copy in CUDA memory for CUDA (data resident on the GPU, as in a reconstruction loop). E is const
// for inputs.
template <class E, int Rank>
class Placed {
 public:
  template <class A>
  Placed(A &host, Device device) : view_(host.data(), host.shape()) {
    if (device != Device::cuda) return;
    gpu_ = std::make_unique<test::DeviceMemory>(host.data(), std::size_t(bytes_of(host)));
    view_ = View<E, Rank>(static_cast<E *>(gpu_->get()), host.shape(), Memory::cuda);
  }
  const View<E, Rank> &view() const { return view_; }

 private:
  std::unique_ptr<test::DeviceMemory> gpu_;
  View<E, Rank> view_;
};
template <class T, int Rank>
Placed<const T, Rank> place_input(const Array<T, Rank> &host, Device device) {
  return {host, device};
}
template <class T, int Rank>
Placed<T, Rank> place_output(Array<T, Rank> &host, Device device) {
  return {host, device};
}

// How a CUDA benchmark waits for its calls' kernels (a call on CUDA memory returns once they are
// queued, hpipe/device.h). each_call: every call waited for, so that its time is the call's whole
// latency, kernels and launch, as bench/torch_peers.py times PyTorch's calls. queued: kQueuedCalls
// calls back to back, then one wait, as a reconstruction loop runs them: the time per call is then
// the kernels' and the gaps between them (needs ->UseManualTime()).
enum class Wait { each_call, queued };
constexpr int kQueuedCalls = 10;

// Times `call` once per iteration.
template <Device D, Wait W = Wait::each_call, class Call>
void time_calls(benchmark::State &state, Call call) {
  for (auto _ : state) {
    if constexpr (W == Wait::queued) {
      static_assert(D == Device::cuda, "only CUDA calls are queued");
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < kQueuedCalls; i++) call();
      test::synchronize_cuda();
      state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
                             kQueuedCalls);
    } else {
      call();
      if constexpr (D == Device::cuda) test::synchronize_cuda();
    }
  }
}

// Every kernel benchmark is a template over the Device and is registered twice by
// HPIPE_BENCHMARK: `BM_x` runs on the CPU; `BM_cuda_x`, with its arrays in CUDA memory, is
// registered by main() only where a GPU is usable (register_cuda_benchmarks()), as are those of
// HPIPE_CUDA_BENCHMARK, which have no CPU twin.
using BenchmarkFunction = void (*)(benchmark::State &);
using Configure = void (*)(benchmark::internal::Benchmark *);
int register_on_both(const char *name, BenchmarkFunction cpu, BenchmarkFunction cuda, Configure configure);
int register_cuda_only(const char *name, BenchmarkFunction cuda, Configure configure);
void register_cuda_benchmarks();

#define HPIPE_BENCHMARK(fn, ...)                                                                 \
  [[maybe_unused]] const int fn##_registered =                                                   \
      ::hpipe::bench::register_on_both(#fn, fn<::hpipe::Device::cpu>, fn<::hpipe::Device::cuda>, \
                                       [](::benchmark::internal::Benchmark *b) { b __VA_ARGS__; })

#define HPIPE_CUDA_BENCHMARK(fn, ...)          \
  [[maybe_unused]] const int fn##_registered = \
      ::hpipe::bench::register_cuda_only(#fn, fn, [](::benchmark::internal::Benchmark *b) { b __VA_ARGS__; })

}  // namespace hpipe::bench
