// How every public op calls its AOT kernel: argument checks, the choice of backend, Halide
// buffers over the caller's views (copies only where a layout or memory space needs one), error
// collection through user_context, and the copy back of outputs.
//
// An op describes its arguments, then runs the kernel with them in the kernel's order:
//   Call call("cassi_forward", options);
//   auto x = call.input("x", x_view);  auto y = call.output("y", y_view);
//   call.run(kernels::cassi_forward<T>, x, mask, step, axis, y);
#pragma once

#include <deque>
#include <memory>
#include <sstream>
#include <string>
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

// A kernel built for the CPU and, when HPIPE_CUDA is on, for CUDA (else `cuda` is null).
template <class Fn>
struct Kernel {
  Fn cpu;
  Fn cuda;
};

// What Halide receives as user_context: where errors are collected, and the CUDA stream.
struct CallContext {
  std::string error;
  void *cuda_stream = nullptr;
};

// "(2, 3, 4)"
template <class Extents>
std::string shape_string(const Extents &shape) {
  std::ostringstream out;
  out << "(";
  for (std::size_t i = 0; i < shape.size(); i++) out << (i ? ", " : "") << shape[i];
  out << (shape.size() == 1 ? ",)" : ")");
  return out.str();
}

class Call {
 public:
  // A handle to a described buffer argument, resolved to a halide_buffer_t* by run().
  struct Arg {
    int index;
  };

  Call(std::string op, const Options &options);
  ~Call();
  Call(const Call &) = delete;
  Call &operator=(const Call &) = delete;

  template <class T, int R>
  Arg input(const char *name, const View<const T, R> &view) {
    return add(name, false, halide_type_of<T>(), const_cast<T *>(view.data()), R, view.shape().data(),
               view.strides().data(), view.memory());
  }
  template <class T, int R>
  Arg output(const char *name, const View<T, R> &view) {
    static_assert(!std::is_const_v<T>, "outputs are writable views");
    return add(name, true, halide_type_of<T>(), view.data(), R, view.shape().data(), view.strides().data(),
               view.memory());
  }

  // Throws Error("hpipe::<op>: <name>: <message>").
  [[noreturn]] void fail(const std::string &name, const std::string &message) const;

  // Resolves the backend, checks aliasing, builds the buffers, calls the kernel with
  // (context, args...) where each Arg becomes its halide_buffer_t*, and finishes the outputs.
  template <class Fn, class... Args>
  void run(const Kernel<Fn> &kernel, Args... args) {
    prepare();
    Fn fn = backend_ == Backend::cuda ? kernel.cuda : kernel.cpu;
    const int status = fn(&context_, resolve(args)...);
    finish(status);
  }

 private:
  struct Buffer;
  Arg add(const char *name, bool is_output, halide_type_t type, void *data, int rank, const std::int64_t *shape,
          const std::int64_t *strides, Memory memory);
  void prepare();
  void finish(int status);
  halide_buffer_t *resolve(Arg a);
  template <class V>
  V resolve(V v) {
    static_assert(std::is_arithmetic_v<V>, "kernel arguments are buffers or scalars");
    return v;
  }

  std::string op_;
  Options options_;
  Backend backend_ = Backend::cpu;
  CallContext context_;
  std::deque<Buffer> buffers_;
};

}  // namespace hpipe::detail
