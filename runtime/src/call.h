// How every public op calls its AOT kernel: argument checks, the choice of backend, Halide
// buffers over the caller's views (copies only where a layout or memory space needs one), error
// collection through user_context, and the copy back of outputs.
//
// An op describes its arguments, then runs the kernel with them in the kernel's order:
//   Call call("cassi_forward", options);
//   auto x = call.input("x", x_view);  auto y = call.output("y", y_view);
//   call.run(kernels::cassi_forward<T>, x, mask, step, axis, y);
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "HalideBuffer.h"
#include "HalideRuntime.h"
#include "fail.h"
#include "hpipe/device.h"
#include "hpipe/error.h"
#include "hpipe/view.h"

namespace hpipe::detail {

enum class Backend { cpu, cuda };

// A kernel built for the CPU and, when HPIPE_CUDA is on, for CUDA (else `cuda` is null); some also
// for the CPU with streaming stores into their outputs (`cpu_streaming`, else null), which Call
// runs for outputs larger than the caches.
template <class Fn>
struct Kernel {
  Fn cpu;
  Fn cuda;
  Fn cpu_streaming = nullptr;
};

// What Halide receives as user_context: where errors are collected, and the CUDA stream.
struct CallContext {
  std::string error;
  void *cuda_stream = nullptr;
};

// "(2, 3, 4)"
template <class Extents>
std::string shape_string(const Extents &shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); i++) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

// The bytes [first, last) a view can touch, and in which memory space; its elements (of
// `element_bytes`) start at `first` plus multiples of `period` (the gcd of its byte strides; 0 for
// one element).
struct Footprint {
  std::uintptr_t first = 0, last = 0;
  Memory memory = Memory::host;
  std::uintptr_t period = 0, element_bytes = 0;
  // Whether the two may share a byte: their ranges intersect, and they do not interleave (as a
  // row's even and odd columns do: no start of an element of one falls, modulo the periods' gcd,
  // within an element of the other). Exact for two views of one and the same stride; conservative
  // otherwise (elements 0 and 3 against 1 and 6 overlap by this test).
  bool overlaps(const Footprint &other) const {
    if (memory != other.memory || !(first < other.last && other.first < last)) return false;
    const std::uintptr_t g = std::gcd(period, other.period);
    if (g == 0) return true;  // two elements whose bytes intersect
    const std::uintptr_t offset = (other.first % g + g - first % g) % g;
    return offset < element_bytes || offset + other.element_bytes > g;
  }
};
// Of a view of `rank` dimensions (NumPy order, strides in elements); nothing for a view without elements.
Footprint footprint(const void *data, int element_bytes, int rank, const std::int64_t *shape,
                    const std::int64_t *strides, Memory memory);
template <class T, int R>
Footprint footprint(const View<T, R> &v) {
  return footprint(v.data(), sizeof(T), R, v.shape().data(), v.strides().data(), v.memory());
}

// Throws "hpipe::<op>: <name>: every dimension must be at least 0, got shape (...)" unless it is so.
void check_extents(std::string_view op, std::string_view name, int rank, const std::int64_t *shape);
template <class T, int R>
void check_extents(std::string_view op, std::string_view name, const View<T, R> &v) {
  check_extents(op, name, R, v.shape().data());
}

// The limits of one kernel buffer of `shape` (NumPy order, dense): every extent at least 0 and below
// 2^31, at most 2 GiB in all. Call checks each argument so; an op that allocates its output checks
// the output's shape with this before it allocates, so that a call that would fail allocates nothing.
void check_kernel_buffer(std::string_view op, std::string_view name, int rank, const std::int64_t *shape,
                         int element_bytes);
template <class T, std::size_t R>
void check_kernel_buffer(std::string_view op, std::string_view name, const std::array<std::int64_t, R> &shape) {
  check_kernel_buffer(op, name, static_cast<int>(R), shape.data(), sizeof(T));
}

// The most bytes one argument of a kernel call may span (Halide's buffers index in 32 bits).
constexpr std::int64_t kMostKernelBufferBytes = std::numeric_limits<std::int32_t>::max();

// Items [first, first + count) of a view's first (batch) dimension.
template <class T, int R>
View<T, R> batch_part(const View<T, R> &v, std::int64_t first, std::int64_t count) {
  auto shape = v.shape();
  shape[0] = count;
  return View<T, R>(v.data() + first * v.stride(0), shape, v.strides(), v.memory());
}
// A shape with at most one item in its first dimension: what one kernel call of an op that runs
// batches in parts (below) must be able to take.
template <std::size_t R>
std::array<std::int64_t, R> one_item(std::array<std::int64_t, R> shape) {
  shape[0] = std::min<std::int64_t>(shape[0], 1);
  return shape;
}
// The most bytes of a view (dense) a kernel call of an op that runs batches in parts takes:
// kMostKernelBufferBytes, or less with HPIPE_BATCH_PART_BYTES at start-up (the tests' small parts).
std::int64_t batch_part_bytes();
// How many items of the first dimension one kernel call takes: as many as keep every view (all of
// one batch) within batch_part_bytes() when dense, at least 1. Ops whose items are independent
// call their kernel on parts of that many, so that a batch of any size runs.
template <class... Views>
std::int64_t items_per_call(const Views &...views) {
  std::int64_t item_bytes = 1;
  const auto bytes_per_item = [](const auto &v) -> std::int64_t {
    return v.shape(0) > 0 ? v.size() / v.shape(0) * std::int64_t(sizeof(*v.data())) : 0;
  };
  ((item_bytes = std::max(item_bytes, bytes_per_item(views))), ...);
  return std::max<std::int64_t>(1, batch_part_bytes() / item_bytes);
}

// f(first, count) for the consecutive parts of `per_call` items (the last one shorter) of `items`.
template <class F>
void for_each_part(std::int64_t items, std::int64_t per_call, const F &f) {
  for (std::int64_t first = 0; first < items; first += per_call) f(first, std::min(per_call, items - first));
}

// The columns (innermost elements, contiguous) before every row of a host view reaches a cache line,
// where every row starts at the same place in one, there are enough columns after them and the view
// is large enough to repay a kernel call; else 0. Kernels' vectors load whole lines from there on,
// so ops whose results do not depend on it run those columns as a call of their own (on the CPU): a
// NumPy array starts 16 bytes into a line (logsumexp along axis 0 of 10^4 x 10^4 float64 took 59-97
// ms so against 46-52 from a line, Zen 5, AVX-512), and a call costs about a microsecond (logsumexp
// down 8 x 320 float32: 4.8-5.0 us split, 3.9-4.1 not).
template <class T, int R>
std::int64_t columns_before_line(const View<T, R> &v) {
  constexpr std::int64_t kLine = 64, kFewestColumnsAfter = 256, kFewestBytes = std::int64_t(1) << 20;
  const auto address = reinterpret_cast<std::uintptr_t>(v.data());
  if (v.memory() != Memory::host || v.stride(R - 1) != 1 || address % sizeof(T) != 0 ||
      v.size() * std::int64_t(sizeof(T)) < kFewestBytes)
    return 0;
  for (int d = 0; d < R - 1; d++)
    if (v.shape(d) > 1 && v.stride(d) * std::int64_t(sizeof(T)) % kLine != 0) return 0;
  const std::int64_t lead = std::int64_t((kLine - address % kLine) % kLine) / std::int64_t(sizeof(T));
  return v.shape(R - 1) - lead >= kFewestColumnsAfter ? lead : 0;
}

// Throws "hpipe::<op>: <name>: its elements may share memory ..." unless an output's elements each
// have memory of their own, as Call does for its outputs: with the dimensions of extent > 1 ordered
// by |stride|, each stride must step past the span of the smaller ones (a stride of 0, an expanded
// view, never does). Views made by slicing and transposing dense arrays always pass.
void check_output_layout(std::string_view op, std::string_view name, int rank, const std::int64_t *shape,
                         const std::int64_t *strides);

// Throws "hpipe::<op>: <out_name>: overlaps input <in_name>; ..." as Call does for the buffers of
// one kernel call, after check_output_layout. Ops that split views into several calls, or copy
// them first, check the whole views with this before they do.
[[noreturn]] void fail_overlap(std::string_view op, std::string_view out_name, bool other_is_output,
                               std::string_view other_name);
template <class O, int RO, class I, int RI>
void check_disjoint(std::string_view op, std::string_view out_name, const View<O, RO> &out, std::string_view in_name,
                    const View<I, RI> &in) {
  check_output_layout(op, out_name, RO, out.shape().data(), out.strides().data());
  if (footprint(out).overlaps(footprint(in))) fail_overlap(op, out_name, false, in_name);
}

class Call {
 public:
  // A handle to a described buffer argument, resolved to a halide_buffer_t* by run().
  struct Arg {
    int index;
  };

  Call(const char *op, const Options &options);  // op: a string literal, the public function's name
  ~Call();
  Call(const Call &) = delete;
  Call &operator=(const Call &) = delete;

  // The most dimensions of a view the API takes.
  static constexpr int kMaxRank = 4;

  template <class T, int R>
  Arg input(const char *name, const View<const T, R> &view) {
    static_assert(R <= kMaxRank, "Call::Buffer holds kMaxRank dimensions");
    return add(name, false, halide_type_of<T>(), const_cast<T *>(view.data()), R, view.shape().data(),
               view.strides().data(), view.memory());
  }
  template <class T, int R>
  Arg output(const char *name, const View<T, R> &view) {
    static_assert(!std::is_const_v<T>, "outputs are writable views");
    static_assert(R <= kMaxRank, "Call::Buffer holds kMaxRank dimensions");
    return add(name, true, halide_type_of<T>(), view.data(), R, view.shape().data(), view.strides().data(),
               view.memory());
  }
  // An output that is the very view of `input` (an elementwise op written in place, as NumPy's
  // np.exp(x, out=x)): run() lets that pair share memory. The op sees to it that its kernel reads
  // each element before writing it and none after.
  template <class T, int R>
  Arg output_over(const char *name, const View<T, R> &view, Arg input) {
    const Arg out = output(name, view);
    set_same_as(out, input);
    return out;
  }

  const char *op() const { return op_; }
  // Whether run() will run the CUDA kernel (from the options and where the views added so far are).
  bool uses_cuda();
  // What run() refuses of the views added so far, for an op that runs many kernels over them (a
  // reconstruction) and so checks them before any work: the backend's errors, then a view in CUDA
  // memory that a kernel cannot take in place.
  void check_views();

  // Throws Error("hpipe::<op>: <name>: <message>").
  [[noreturn]] void fail(std::string_view name, const std::string &message) const;

  // Resolves the backend, checks aliasing, builds the buffers, calls the kernel with
  // (context, args...) where each Arg becomes its halide_buffer_t*, and finishes the outputs. Where
  // every output is empty (an extent of 0, as NumPy allows) there is nothing to compute: the backend
  // is resolved, as for any call, and no kernel runs; an empty input to outputs with elements is an
  // error naming both (an op whose outputs are then sums or reductions of no terms calls
  // run_filled() instead).
  // For an op that found its outputs empty before choosing a kernel: what run() does then.
  void run_nothing();
  // For an op whose reduction runs over no elements: what run() does, but instead of a kernel each
  // output element is set to the reduction's identity (logsumexp's -inf, a dot's 0), in host or
  // CUDA memory. Float and double outputs.
  void run_filled(double identity);
  template <class Fn, class... Args>
  void run(const Kernel<Fn> &kernel, Args... args) {
    if (nothing_to_compute()) return;
    prepare();
    Fn fn = backend_ == Backend::cuda                           ? kernel.cuda
            : kernel.cpu_streaming && outputs_worth_streaming() ? kernel.cpu_streaming
                                                                : kernel.cpu;
    const int status = fn(&context_, resolve(args)...);
    finish(status);
  }

 private:
  struct Buffer {
    const char *name = "";  // a string literal
    bool is_output = false;
    Memory memory = Memory::host;
    halide_type_t type;
    char *data = nullptr;
    int rank = 0;
    std::array<halide_dimension_t, kMaxRank> dims;  // Halide order: innermost first
    Halide::Runtime::Buffer<void> caller;           // over the caller's memory
    Halide::Runtime::Buffer<void> dense;            // dense host copy, when the innermost stride is not 1
    bool on_device = false;                         // kernel buffer may hold a device allocation or wrap
    bool released = false;
    bool empty = false;  // an extent of 0
    int same_as = -1;    // an output_over: the input it is the view of
    Footprint bytes;

    halide_buffer_t *kernel_buffer() { return dense.data() ? dense.raw_buffer() : caller.raw_buffer(); }
  };
  // The most buffer arguments of any kernel (an ADMM-TV step has 7).
  static constexpr int kMostBuffers = 8;
  // The arguments, held in the Call: a heap array of them made a small call's malloc consolidate
  // its free lists, 8% of a tiny CASSI call.
  struct Buffers {
    std::array<Buffer, kMostBuffers> items;
    int count = 0;
    Buffer *begin() { return items.data(); }
    Buffer *end() { return items.data() + count; }
    const Buffer *begin() const { return items.data(); }
    const Buffer *end() const { return items.data() + count; }
  };

  Arg add(const char *name, bool is_output, halide_type_t type, void *data, int rank, const std::int64_t *shape,
          const std::int64_t *strides, Memory memory);
  void set_same_as(Arg output, Arg input);
  void select_backend();
  void check_in_place() const;
  bool nothing_to_compute();
  void prepare();
  // Whether the outputs, all in host memory, written in place, their pointers and outer strides
  // 64-byte aligned (what a streaming kernel requires), together exceed the last-level cache: plain
  // stores first read each line they write, streaming stores do not, but they leave nothing in the
  // caches for the next op.
  bool outputs_worth_streaming() const;
  void finish(int status);
  halide_buffer_t *resolve(Arg a);
  template <class V>
  V resolve(V v) {
    static_assert(std::is_arithmetic_v<V>, "kernel arguments are buffers or scalars");
    return v;
  }

  const char *op_;
  Options options_;
  Backend backend_ = Backend::cpu;
  CallContext context_;
  Buffers buffers_;
};

// Copies the elements of a view in CUDA memory into a host view of the same shape (either with any
// strides), once the work queued on `options`' stream is done: for an op that reads on the host
// what a caller gave it in device memory (a reconstruction's residual reads the measurement).
void copy_to_host(const char *op, halide_type_t type, int rank, const std::int64_t *shape, const void *device,
                  const std::int64_t *device_strides, void *host, const std::int64_t *host_strides,
                  const Options &options);
template <class T, int R>
void copy_to_host(const char *op, const View<const T, R> &device, const View<T, R> &host, const Options &options) {
  copy_to_host(op, halide_type_of<T>(), R, device.shape().data(), device.data(), device.strides().data(), host.data(),
               host.strides().data(), options);
}

// An array in CUDA memory (dense, C order) for an op that runs many kernel calls over the same
// arrays (a reconstruction's iterations): its calls then read and write device memory, where a call
// on host views copies them to the device and back every time. Made in the context hpipe's calls
// use, with a host view's elements or uninitialised; on destruction the work queued on `options`'
// stream is waited for and the memory given back to Halide's CUDA runtime (which keeps blocks for
// reuse).
class DeviceArray {
 public:
  // A copy of `host`'s elements.
  template <class T, int R>
  DeviceArray(const char *op, const View<const T, R> &host, const Options &options)
      : DeviceArray(op, halide_type_of<T>(), R, host.shape().data(), host.data(), host.strides().data(), options) {}
  // Uninitialised, of `type` and `shape`.
  template <std::size_t R>
  DeviceArray(const char *op, halide_type_t type, const std::array<std::int64_t, R> &shape, const Options &options)
      : DeviceArray(op, type, static_cast<int>(R), shape.data(), nullptr, nullptr, options) {}
  ~DeviceArray();
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;

  // The array as a view of CUDA memory of `shape` (the one it was made with).
  template <class T, int R>
  View<T, R> view(const std::array<std::int64_t, static_cast<std::size_t>(R)> &shape) const {
    return View<T, R>(static_cast<T *>(device_), shape, Memory::cuda);
  }

 private:
  // `data` null: uninitialised.
  DeviceArray(const char *op, halide_type_t type, int rank, const std::int64_t *shape, const void *data,
              const std::int64_t *strides, const Options &options);
  CallContext context_;
  Halide::Runtime::Buffer<void> buffer_;
  void *device_ = nullptr;  // null for an array without elements
};

}  // namespace hpipe::detail
