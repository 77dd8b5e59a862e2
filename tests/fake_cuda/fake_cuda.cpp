// A stand-in for the NVIDIA driver library (libcuda.so.1) that runs no kernels, so that hpipe's
// CUDA host path (device probing, contexts, streams, copies, Halide's CUDA runtime, errors) runs
// and is checked on machines without a GPU. Device memory is host memory; every byte of a new
// allocation is kFakeCudaFreshByte. Recorded as misuse, the call failing: a device range outside
// the live allocations, a kernel its module's PTX does not name, a double free; recorded, the call
// going through: a copy to the host on the default stream while kernels queued on another stream
// have not been waited for (on a GPU that copy does not wait for them). Counters, the misuse record and failure injection are exported
// (fake_cuda.h); HPIPE_FAKE_CUDA_FAIL=<entry point> makes that entry point fail from the first call.
#include "fake_cuda.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace {

using CUresult = int;
using CUdeviceptr = std::uint64_t;

// The driver's codes, those the fake returns.
constexpr CUresult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kNoDevice = 100, kInvalidContext = 201,
                   kInvalidHandle = 400, kNotFound = 500, kLaunchFailed = 719, kNotSupported = 801;

struct State {
  std::mutex mutex;
  std::map<CUdeviceptr, std::size_t> live;  // allocations by start
  std::map<std::string, long long> calls;
  std::map<std::string, long long> last_call;  // the sequence number of each entry point's last call
  long long sequence = 0;
  void *launch_stream = nullptr;    // of the last launch
  void *unwaited_stream = nullptr;  // a stream other than the default with launches not waited for
  std::string misuse;
  std::string fail_function;  // the entry point to fail, after fail_after more calls, fail_times times
  long long fail_after = 0, fail_times = 0;
  bool fail_always = false;

  State() {
    if (const char *name = std::getenv("HPIPE_FAKE_CUDA_FAIL")) fail_function = name, fail_always = true;
  }
};

// Never destroyed: Halide's runtime unloads its modules from a destructor at exit.
State &state() {
  static State *s = new State;
  return *s;
}

// One context, the "primary" one; a thread's current context is the top of its stack (plain
// thread-locals: Halide's runtime pushes and pops from a destructor at exit).
int primary_context_storage;
void *const kPrimaryContext = &primary_context_storage;
constexpr int kMostContexts = 16;
thread_local void *context_stack[kMostContexts];
thread_local int contexts = 0;
void *current_context() { return contexts ? context_stack[contexts - 1] : nullptr; }

// Counts the call; true when it should fail (injected).
bool enter(State &s, const char *function) {
  s.calls[function]++;
  s.last_call[function] = ++s.sequence;
  if (s.fail_function != function) return false;
  if (s.fail_always) return true;
  if (s.fail_after > 0) return s.fail_after--, false;
  if (--s.fail_times == 0) s.fail_function.clear();
  return true;
}

void record_misuse(State &s, const std::string &what) {
  if (s.misuse.empty()) s.misuse = what;
}

// True when [p, p + bytes) lies in one live allocation.
bool in_allocation(State &s, CUdeviceptr p, std::size_t bytes, const char *function) {
  auto it = s.live.upper_bound(p);
  if (it != s.live.begin()) {
    --it;
    if (p >= it->first && p + bytes <= it->first + it->second) return true;
  }
  record_misuse(s, std::string(function) + ": device range of " + std::to_string(bytes) + " bytes at " +
                       std::to_string(p) + " is not inside a live allocation");
  return false;
}

CUresult copy(const char *function, void *to, const void *from, std::size_t bytes, CUdeviceptr device_to,
              CUdeviceptr device_from) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (enter(s, function)) return kInvalidValue;
  if (device_to && !in_allocation(s, device_to, bytes, function)) return kInvalidValue;
  if (device_from && !in_allocation(s, device_from, bytes, function)) return kInvalidValue;
  std::memmove(to, from, bytes);
  return kSuccess;
}

// An entry point that only counts (and may be made to fail).
CUresult counted(const char *function, CUresult failure = kInvalidValue) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return enter(s, function) ? failure : kSuccess;
}

void *as_pointer(CUdeviceptr p) { return reinterpret_cast<void *>(static_cast<std::uintptr_t>(p)); }

}  // namespace

extern "C" {

// ---- the driver API entry points that hpipe and Halide 14's CUDA runtime look up ----

CUresult cuInit(unsigned) { return counted("cuInit", kNoDevice); }

CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return counted("cuDeviceGetCount");
}

CUresult cuDeviceGet(int *device, int ordinal) {
  *device = 0;
  return ordinal == 0 ? counted("cuDeviceGet") : kInvalidValue;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, int) {
  switch (attribute) {
    case 75: *value = 8; break;    // compute capability major: sm_80 code runs
    case 76: *value = 0; break;    // minor
    case 1: *value = 1024; break;  // max threads per block
    case 16: *value = 132; break;  // multiprocessors
    default: *value = 65535; break;
  }
  return counted("cuDeviceGetAttribute");
}

CUresult cuDeviceGetName(char *name, int length, int) {
  std::strncpy(name, "hpipe fake CUDA device", static_cast<std::size_t>(length));
  if (length > 0) name[length - 1] = '\0';
  return counted("cuDeviceGetName");
}

CUresult cuDeviceTotalMem_v2(std::size_t *bytes, int) {
  *bytes = std::size_t(16) << 30;
  return counted("cuDeviceTotalMem_v2");
}

CUresult cuDevicePrimaryCtxRetain(void **context, int) {
  *context = kPrimaryContext;
  return counted("cuDevicePrimaryCtxRetain");
}

// A new context is current on the calling thread, as the driver's is (Halide's runtime pops it).
CUresult cuCtxCreate_v2(void **context, unsigned, int) {
  if (contexts == kMostContexts) return kInvalidContext;
  *context = context_stack[contexts++] = kPrimaryContext;
  return counted("cuCtxCreate_v2");
}

CUresult cuCtxDestroy_v2(void *) { return counted("cuCtxDestroy_v2"); }

CUresult cuCtxSetCurrent(void *context) {
  if (contexts == 0) contexts = 1;
  context_stack[contexts - 1] = context;
  return counted("cuCtxSetCurrent");
}

CUresult cuCtxGetCurrent(void **context) {
  *context = current_context();
  return counted("cuCtxGetCurrent");
}

CUresult cuCtxPushCurrent_v2(void *context) {
  if (context != kPrimaryContext || contexts == kMostContexts) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    record_misuse(s, context != kPrimaryContext ? "cuCtxPushCurrent_v2: not a context"
                                                : "cuCtxPushCurrent_v2: contexts pushed and never popped");
    return kInvalidContext;
  }
  context_stack[contexts++] = context;
  return counted("cuCtxPushCurrent_v2");
}

CUresult cuCtxPopCurrent_v2(void **context) {
  if (contexts == 0) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    record_misuse(s, "cuCtxPopCurrent_v2: no context to pop");
    return kInvalidContext;
  }
  if (context) *context = context_stack[contexts - 1];
  contexts--;
  return counted("cuCtxPopCurrent_v2");
}

CUresult cuCtxGetApiVersion(void *, unsigned *version) {
  *version = 12000;
  return counted("cuCtxGetApiVersion");
}

CUresult cuCtxGetDevice(int *device) {
  if (!current_context()) return kInvalidContext;
  *device = 0;
  return counted("cuCtxGetDevice");
}

CUresult cuCtxSynchronize() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (enter(s, "cuCtxSynchronize")) return kLaunchFailed;
  s.unwaited_stream = nullptr;
  return kSuccess;
}
CUresult cuStreamSynchronize(void *stream) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (enter(s, "cuStreamSynchronize")) return kLaunchFailed;
  if (stream == s.unwaited_stream) s.unwaited_stream = nullptr;
  return kSuccess;
}
CUresult cuProfilerStop() { return counted("cuProfilerStop"); }

// A module is its PTX text, kept so that functions can be looked up in it.
CUresult cuModuleLoadData(void **module, const void *image) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (enter(s, "cuModuleLoadData")) return kInvalidValue;
  const char *ptx = static_cast<const char *>(image);
  if (!std::strstr(ptx, ".entry")) {
    record_misuse(s, "cuModuleLoadData: the image is not PTX with kernels");
    return kInvalidValue;
  }
  *module = new std::string(ptx);
  return kSuccess;
}

CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned, void *, void **) {
  return cuModuleLoadData(module, image);
}

CUresult cuModuleUnload(void *module) {
  delete static_cast<std::string *>(module);
  return counted("cuModuleUnload");
}

CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (enter(s, "cuModuleGetFunction")) return kNotFound;
  const auto *ptx = static_cast<const std::string *>(module);
  if (!ptx || ptx->find(std::string(".entry ") + name) == std::string::npos) {
    record_misuse(s, std::string("cuModuleGetFunction: no kernel ") + name + " in the module");
    return kNotFound;
  }
  *function = module;
  return kSuccess;
}

CUresult cuMemAlloc_v2(CUdeviceptr *pointer, std::size_t bytes) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (enter(s, "cuMemAlloc_v2")) return kOutOfMemory;
  void *memory = std::malloc(bytes ? bytes : 1);
  if (!memory) return kOutOfMemory;
  std::memset(memory, kFakeCudaFreshByte, bytes);
  *pointer = reinterpret_cast<std::uintptr_t>(memory);
  s.live[*pointer] = bytes;
  return kSuccess;
}

CUresult cuMemFree_v2(CUdeviceptr pointer) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (enter(s, "cuMemFree_v2")) return kInvalidValue;
  auto it = s.live.find(pointer);
  if (it == s.live.end()) {
    record_misuse(s, "cuMemFree_v2: " + std::to_string(pointer) + " is not a live allocation");
    return kInvalidValue;
  }
  std::free(as_pointer(pointer));
  s.live.erase(it);
  return kSuccess;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr to, const void *from, std::size_t bytes) {
  return copy("cuMemcpyHtoD", as_pointer(to), from, bytes, to, 0);
}
CUresult cuMemcpyDtoH_v2(void *to, CUdeviceptr from, std::size_t bytes) {
  {
    // A copy on the default stream does not wait for kernels queued on another (non-blocking) one.
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.unwaited_stream) record_misuse(s, "cuMemcpyDtoH_v2: kernels queued on another stream not waited for");
  }
  return copy("cuMemcpyDtoH", to, as_pointer(from), bytes, 0, from);
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr to, CUdeviceptr from, std::size_t bytes) {
  return copy("cuMemcpyDtoD", as_pointer(to), as_pointer(from), bytes, to, from);
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr to, const void *from, std::size_t bytes, void *) {
  return cuMemcpyHtoD_v2(to, from, bytes);
}
CUresult cuMemcpyDtoHAsync_v2(void *to, CUdeviceptr from, std::size_t bytes, void *stream) {
  if (!stream) return cuMemcpyDtoH_v2(to, from, bytes);
  return copy("cuMemcpyDtoH", to, as_pointer(from), bytes, 0, from);  // ordered after the stream's kernels
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr to, CUdeviceptr from, std::size_t bytes, void *) {
  return cuMemcpyDtoD_v2(to, from, bytes);
}
// The pre-3.2 names, which Halide's runtime also asks for.
CUresult cuMemcpyHtoD(CUdeviceptr to, const void *from, std::size_t bytes) { return cuMemcpyHtoD_v2(to, from, bytes); }
CUresult cuMemcpyDtoH(void *to, CUdeviceptr from, std::size_t bytes) { return cuMemcpyDtoH_v2(to, from, bytes); }
CUresult cuMemcpyDtoD(CUdeviceptr to, CUdeviceptr from, std::size_t bytes) { return cuMemcpyDtoD_v2(to, from, bytes); }

CUresult cuMemcpy3D_v2(const void *) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  record_misuse(s, "cuMemcpy3D_v2: not implemented by the fake driver");
  return kNotSupported;
}

CUresult cuLaunchKernel(void *function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        void *stream, void **, void **) {
  if (!function) return kInvalidHandle;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (enter(s, "cuLaunchKernel")) return kLaunchFailed;
  s.launch_stream = stream;
  if (stream) s.unwaited_stream = stream;
  return kSuccess;
}

CUresult cuPointerGetAttribute(void *result, int attribute, CUdeviceptr pointer) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (enter(s, "cuPointerGetAttribute")) return kInvalidValue;
  if (!in_allocation(s, pointer, 1, "cuPointerGetAttribute")) return kInvalidValue;
  if (attribute == 1) *static_cast<void **>(result) = kPrimaryContext;  // CU_POINTER_ATTRIBUTE_CONTEXT
  return kSuccess;
}

// ---- control, for the tests ----

long long hpipe_fake_cuda_calls(const char *function) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.calls.find(function);
  return it == s.calls.end() ? 0 : it->second;
}

long long hpipe_fake_cuda_last_call(const char *function) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.last_call.find(function);
  return it == s.last_call.end() ? 0 : it->second;
}

void *hpipe_fake_cuda_launch_stream() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.launch_stream;
}

long long hpipe_fake_cuda_live_allocations() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return static_cast<long long>(s.live.size());
}

const char *hpipe_fake_cuda_misuse() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.misuse.c_str();
}

void hpipe_fake_cuda_clear_misuse() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.misuse.clear();
}

void hpipe_fake_cuda_fail(const char *function, long long after_calls, long long times) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.fail_function = times > 0 ? function : "", s.fail_after = after_calls, s.fail_times = times;
  s.fail_always = false;
}

}  // extern "C"
