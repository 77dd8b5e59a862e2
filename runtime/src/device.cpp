// Device probing, CUDA context/stream plumbing and thread count.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "HalideRuntime.h"
#include "call.h"
#include "cuda_support.h"
#include "environment.h"
#include "hpipe/device.h"
#include "hpipe/error.h"
#include "thread_pool.h"
#ifdef HPIPE_HAVE_CUDA
#include "HalideRuntimeCuda.h"
#endif

namespace hpipe {

namespace {

// The few driver entry points hpipe itself needs, loaded with dlopen so that a machine without
// a driver only loses CUDA. (Halide's CUDA runtime loads the same library for the kernels.)
struct Driver {
  using CUresult = int;
  using CUdevice = int;
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGetCount)(int *) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *, int) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(void **, CUdevice) = nullptr;
  CUresult (*cuCtxGetCurrent)(void **) = nullptr;
  bool usable = false;
  std::string why_not;
};

const Driver &driver() {
  static const Driver d = [] {
    Driver d;
#ifndef HPIPE_HAVE_CUDA
    d.why_not = "this hpipe was built without CUDA (HPIPE_CUDA=OFF)";
    return d;
#else
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      d.why_not = "the NVIDIA driver library libcuda.so.1 could not be loaded";
      return d;
    }
    auto load = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      return fn != nullptr;
    };
    if (!load(d.cuInit, "cuInit") || !load(d.cuDeviceGetCount, "cuDeviceGetCount") ||
        !load(d.cuDeviceGet, "cuDeviceGet") || !load(d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") ||
        !load(d.cuCtxGetCurrent, "cuCtxGetCurrent")) {
      d.why_not = "libcuda.so.1 lacks the driver API entry points hpipe needs";
      return d;
    }
    if (int err = d.cuInit(0)) {
      d.why_not = "cuInit failed with CUDA error " + std::to_string(err) + " (no GPU, or the driver is unusable)";
      return d;
    }
    int count = 0;
    if (d.cuDeviceGetCount(&count) != 0 || count < 1) {
      d.why_not = "the driver reports no CUDA device";
      return d;
    }
    d.usable = true;
    return d;
#endif
  }();
  return d;
}

#ifdef HPIPE_HAVE_CUDA
// Run in the calling thread's current context (the one the application's device pointers belong
// to), else in device 0's primary context, which the CUDA runtime API shares.
extern "C" int acquire_cuda_context(void *, void **context, bool create) {
  const Driver &d = driver();
  void *current = nullptr;
  if (d.cuCtxGetCurrent(&current) == 0 && current) {
    *context = current;
    return 0;
  }
  static void *primary = [&]() -> void * {
    int device = 0;
    void *ctx = nullptr;
    if (d.cuDeviceGet(&device, 0) != 0 || d.cuDevicePrimaryCtxRetain(&ctx, device) != 0) return nullptr;
    return ctx;
  }();
  *context = primary;
  return primary ? 0 : -1;
}
extern "C" int release_cuda_context(void *) { return 0; }
extern "C" int get_cuda_stream(void *user_context, void *, void **stream) {
  *stream = user_context ? static_cast<detail::CallContext *>(user_context)->cuda_stream : nullptr;
  return 0;
}
#endif

// Computed once: hardware_concurrency() reads /sys on every call (three system calls), and the
// thread count is read for every parallel loop.
int default_threads() {
  static const int n = detail::default_thread_count();
  return n;
}
std::atomic<int> threads{0};  // 0: default_threads()

int current_threads() {
  const int n = threads.load();
  return n ? n : default_threads();
}

// Every parallel loop of the kernels in hpipe's pool (thread_pool.h), each task through Halide's
// halide_do_task, so that a custom do_task still sees every task.
extern "C" int pool_do_par_for(void *user_context, halide_task_t task, int min, int size, std::uint8_t *closure) {
  return detail::run_parallel_loop(halide_do_task, user_context, task, min, size, closure, current_threads());
}

const bool thread_pool_installed = [] {
  halide_set_custom_do_par_for(pool_do_par_for);
  return true;
}();

// Read from the environment at its first use (the first kernel's dispatch), not at load: like
// hpipe's other variables, HPIPE_CPU_LIMIT may be set after the library is loaded (os.environ
// after `import hpipe`) and before the first call.
std::atomic<CpuLimit> &cpu_limit_now() {
  static std::atomic<CpuLimit> limit{detail::environment().cpu_limit};
  return limit;
}

// The multitarget dispatch asks this before each call which variant's features it may use.
extern "C" int capped_can_use_target_features(int count, const std::uint64_t *features) {
  auto has = [&](halide_target_feature_t f) { return f / 64 < count && ((features[f / 64] >> (f % 64)) & 1); };
  const CpuLimit limit = cpu_limit_now().load();
  if (limit != CpuLimit::none &&
      (has(halide_target_feature_avx512) || has(halide_target_feature_avx512_skylake) ||
       has(halide_target_feature_avx512_cannonlake) || has(halide_target_feature_avx512_knl) ||
       has(halide_target_feature_avx512_sapphirerapids)))
    return 0;
  if (limit == CpuLimit::sse41 && (has(halide_target_feature_avx) || has(halide_target_feature_avx2) ||
                                   has(halide_target_feature_fma) || has(halide_target_feature_f16c)))
    return 0;
  return halide_default_can_use_target_features(count, features);
}

const bool cpu_limit_installed = [] {
  halide_set_custom_can_use_target_features(capped_can_use_target_features);
  return true;
}();

}  // namespace

void set_cpu_limit(CpuLimit limit) { cpu_limit_now() = limit; }
CpuLimit cpu_limit() { return cpu_limit_now().load(); }

bool cuda_available() {
  const Driver &d = driver();
#ifdef HPIPE_HAVE_CUDA
  if (d.usable) {
    static std::once_flag once;
    std::call_once(once, [] {
      halide_set_cuda_acquire_context(acquire_cuda_context);
      halide_set_cuda_release_context(release_cuda_context);
      halide_set_cuda_get_stream(get_cuda_stream);
      halide_reuse_device_allocations(nullptr, true);  // host-memory calls reuse device buffers
    });
  }
#endif
  return d.usable;
}

std::string cuda_unavailable_reason() { return driver().why_not; }

void set_num_threads(int n) {
  if (n < 1 || n > kMostThreads)
    detail::fail("set_num_threads", "threads",
                 (n < 1 ? "expected at least 1" : "expected at most " + std::to_string(kMostThreads)) + ", got " +
                     std::to_string(n));
  threads = n;
}

int num_threads() { return current_threads(); }

const char *to_string(Device device) {
  switch (device) {
    case Device::cpu: return "cpu";
    case Device::cuda: return "cuda";
    case Device::automatic: return "auto";
  }
  return "?";
}

namespace detail {

#ifdef HPIPE_HAVE_CUDA
void wrap_device_pointer(void *context, halide_buffer_t *buffer, void *device_pointer) {
  if (int err = halide_cuda_wrap_device_ptr(context, buffer, reinterpret_cast<std::uint64_t>(device_pointer)))
    throw Error("hpipe: could not wrap a CUDA device pointer (Halide error " + std::to_string(err) + ")");
}
int finish_device_output(void *context, halide_buffer_t *buffer, bool caller_device_memory) {
  if (caller_device_memory) return 0;  // stream-ordered: later work on the stream sees the result
  // The copy to the host runs on the default stream, which does not wait for a caller's stream.
  if (static_cast<CallContext *>(context)->cuda_stream)
    if (const int status = halide_device_sync(context, buffer)) return status;
  return halide_copy_to_host(context, buffer);
}
int copy_to_device(void *context, halide_buffer_t *buffer) {
  return halide_copy_to_device(context, buffer, halide_cuda_device_interface());
}
int allocate_device(void *context, halide_buffer_t *buffer) {
  return halide_device_malloc(context, buffer, halide_cuda_device_interface());
}
int copy_device_to_host(void *context, halide_buffer_t *device, halide_buffer_t *host) {
  // As finish_device_output: the copy runs on the default stream, which does not wait for a caller's.
  if (static_cast<CallContext *>(context)->cuda_stream)
    if (const int status = halide_device_sync(context, device)) return status;
  return halide_buffer_copy(context, device, nullptr, host);
}
int sync_device(void *context, halide_buffer_t *buffer) { return halide_device_sync(context, buffer); }
void release_device(void *context, halide_buffer_t *buffer, bool caller_device_memory) {
  if (caller_device_memory) {
    halide_cuda_detach_device_ptr(context, buffer);
  } else {
    halide_device_free(context, buffer);
  }
}
#else
void wrap_device_pointer(void *, halide_buffer_t *, void *) {
  throw Error("hpipe: CUDA memory given, but this hpipe was built without CUDA (HPIPE_CUDA=OFF)");
}
int finish_device_output(void *, halide_buffer_t *, bool) { return 0; }
int copy_to_device(void *, halide_buffer_t *) { return 0; }                           // no CUDA memory gets this far
int allocate_device(void *, halide_buffer_t *) { return -1; }                         // no CUDA memory gets this far
int copy_device_to_host(void *, halide_buffer_t *, halide_buffer_t *) { return -1; }  // as allocate_device
int sync_device(void *, halide_buffer_t *) { return 0; }
void release_device(void *, halide_buffer_t *, bool) {}
#endif

}  // namespace detail
}  // namespace hpipe
