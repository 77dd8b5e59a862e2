// Device memory for tests and benchmarks, through the driver API loaded with dlopen (tests link no CUDA).
// Allocates in device 0's primary context, the one the CUDA runtime API and hpipe share.
#pragma once

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace hpipe::test {

// The driver entry points these helpers use, loaded once; primary context made current.
struct CudaApi {
  int (*cuMemAlloc)(std::uint64_t *, std::size_t);
  int (*cuMemFree)(std::uint64_t);
  int (*cuMemcpyHtoD)(std::uint64_t, const void *, std::size_t);
  int (*cuMemcpyDtoH)(void *, std::uint64_t, std::size_t);
  int (*cuMemcpyDtoD)(std::uint64_t, std::uint64_t, std::size_t);
  int (*cuCtxSynchronize)();

  static const CudaApi &get() {
    static const CudaApi api = load();
    return api;
  }
  static void check(int err, const char *what) {
    if (err) throw std::runtime_error(std::string(what) + " failed with CUDA error " + std::to_string(err));
  }

 private:
  static CudaApi load() {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) throw std::runtime_error("libcuda.so.1 not loadable");
    auto sym = [&](const char *name) {
      void *p = dlsym(lib, name);
      if (!p) throw std::runtime_error(std::string("missing ") + name);
      return p;
    };
    int (*cuInit)(unsigned) = reinterpret_cast<int (*)(unsigned)>(sym("cuInit"));
    auto cuDeviceGet = reinterpret_cast<int (*)(int *, int)>(sym("cuDeviceGet"));
    auto retain = reinterpret_cast<int (*)(void **, int)>(sym("cuDevicePrimaryCtxRetain"));
    auto set_current = reinterpret_cast<int (*)(void *)>(sym("cuCtxSetCurrent"));
    int device = 0;
    void *ctx = nullptr;
    check(cuInit(0), "cuInit");
    check(cuDeviceGet(&device, 0), "cuDeviceGet");
    check(retain(&ctx, device), "cuDevicePrimaryCtxRetain");
    check(set_current(ctx), "cuCtxSetCurrent");
    return CudaApi{reinterpret_cast<int (*)(std::uint64_t *, std::size_t)>(sym("cuMemAlloc_v2")),
                   reinterpret_cast<int (*)(std::uint64_t)>(sym("cuMemFree_v2")),
                   reinterpret_cast<int (*)(std::uint64_t, const void *, std::size_t)>(sym("cuMemcpyHtoD_v2")),
                   reinterpret_cast<int (*)(void *, std::uint64_t, std::size_t)>(sym("cuMemcpyDtoH_v2")),
                   reinterpret_cast<int (*)(std::uint64_t, std::uint64_t, std::size_t)>(sym("cuMemcpyDtoD_v2")),
                   reinterpret_cast<int (*)()>(sym("cuCtxSynchronize"))};
  }
};

// Waits for all work of the context: hpipe's calls on CUDA memory are stream-ordered.
inline void synchronize_cuda() { CudaApi::check(CudaApi::get().cuCtxSynchronize(), "cuCtxSynchronize"); }

class DeviceMemory {
 public:
  // `bytes` of device memory, filled from `host` when it is not null.
  DeviceMemory(const void *host, std::size_t bytes) : api_(&CudaApi::get()), bytes_(bytes) {
    check(api_->cuMemAlloc(&ptr_, bytes), "cuMemAlloc");
    if (host) check(api_->cuMemcpyHtoD(ptr_, host, bytes), "cuMemcpyHtoD");
  }
  ~DeviceMemory() { api_->cuMemFree(ptr_); }
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;

  void *get() const { return reinterpret_cast<void *>(ptr_); }
  void copy_to(void *host, std::size_t bytes) const { check(api_->cuMemcpyDtoH(host, ptr_, bytes), "cuMemcpyDtoH"); }
  // Device to device, all of `source` (asynchronous: see synchronize_cuda()).
  void copy_from(const DeviceMemory &source) {
    check(api_->cuMemcpyDtoD(ptr_, source.ptr_, source.bytes_), "cuMemcpyDtoD");
  }

 private:
  static void check(int err, const char *what) { CudaApi::check(err, what); }
  const CudaApi *api_;
  std::uint64_t ptr_ = 0;
  std::size_t bytes_;
};

}  // namespace hpipe::test
