// Where kernels run, and the knobs that apply to every call.
#pragma once

#include <string>

namespace hpipe {

enum class Device {
  cpu,
  cuda,
  automatic,  // CUDA when a usable GPU is present (or any argument is in CUDA memory), else CPU
};

struct Options {
  Device device = Device::automatic;
  // CUDA stream (a CUstream) to run on; nullptr is the context's default stream. hpipe runs in
  // the calling thread's current CUDA context when it has one (e.g. the CUDA runtime's primary
  // context that PyTorch and cudaMalloc use), else in device 0's primary context.
  // A call whose outputs are in CUDA memory is stream-ordered, as cuBLAS and PyTorch calls are:
  // it returns once its kernels are queued on this stream, and its results are there for later
  // work on the stream; the host waits for them with cuStreamSynchronize / cudaStreamSynchronize
  // (a blocking copy on the default stream also waits, when this is the default stream). Errors
  // raised while the kernels run surface at that synchronisation. A call with outputs in host
  // memory returns with them written.
  void *cuda_stream = nullptr;
};

// Whether CUDA kernels can run here: hpipe was built with CUDA, libcuda loads, and a device
// exists. Never aborts on a machine without a driver; the answer is computed once.
bool cuda_available();
// Why cuda_available() is false ("" when it is true).
std::string cuda_unavailable_reason();

// Worker threads of the CPU kernels, 1 to kMostThreads (default: the number of cores, or
// HL_NUM_THREADS, capped there: each worker is a thread kept for the process). A new count applies
// to every kernel call that starts after it is set, raised or lowered at any time. Idle workers
// wait for the next call's work spinning for 1 ms before they sleep, so that calls in quick
// succession find them awake; HPIPE_SPIN_US=<microseconds> at start-up sets that time (0: they
// sleep at once, for processes that share their cores with other busy ones; at most 1000000).
// hpipe's environment variables (HPIPE_SPIN_US, HPIPE_CPU_LIMIT, HPIPE_STREAMING_BYTES below) are
// read once, at the first call; one set to a value it does not take makes every call throw
// hpipe::Error naming it.
constexpr int kMostThreads = 1024;
void set_num_threads(int threads);
int num_threads();

const char *to_string(Device device);

// The CPU libraries hold one variant per instruction set (AVX-512, AVX2+FMA, SSE4.1); each kernel
// picks the best the processor supports on its first call and keeps it for the process. A limit
// makes kernels not yet called pick no higher than the given level: to compare variants, or to
// check results on another machine's path. Set it before the first call, or with the environment
// variable HPIPE_CPU_LIMIT=avx2|sse41 at start-up.
//
// Some kernels (exp, log, erf, cassi_adjoint, cassi_pinv, cassi_pinv_alpha, cassi_shift_back) have
// a second CPU library that writes their outputs with streaming stores, which skip reading each
// line before writing it but leave nothing in the caches: it runs when the outputs are in host
// memory, their pointers and outer strides 64-byte aligned, and together larger than the
// last-level cache (HPIPE_STREAMING_BYTES=<bytes> at start-up sets that threshold).
enum class CpuLimit { none, avx2, sse41 };
void set_cpu_limit(CpuLimit limit);
CpuLimit cpu_limit();

}  // namespace hpipe
