// Python arrays as hpipe views: NumPy arrays (read through NumPy's C API) and DLPack producers
// (PyTorch, CuPy), in place, never copied. A Call checks that every array argument of one
// operation agrees in dtype and memory with the first, makes outputs of the first one's kind,
// and turns `device=` and the caller's CUDA stream into hpipe::Options.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <hpipe/hpipe.h>

#include "dlpack.h"

namespace hpipe::python {

namespace py = pybind11;

enum class DType { f32, f64 };

constexpr int kMaxRank = 8;

struct DLPackDeleter {
  void operator()(DLManagedTensor *t) const {
    if (t->deleter) t->deleter(t);
  }
};

// One array argument, described in elements (hpipe's convention), with its Python object kept alive.
struct Operand {
  py::object object;
  char *data = nullptr;
  DType dtype = DType::f32;
  int rank = 0;
  std::array<std::int64_t, kMaxRank> shape{}, strides{};
  Memory memory = Memory::host;
  int device_id = 0;         // CUDA device
  std::intptr_t stream = 0;  // CUDA stream the producer was told hpipe runs on (0: default)
  bool numpy = false;        // else a DLPack producer
  bool c_contiguous() const;
  bool empty() const;                                      // an extent of 0
  std::unique_ptr<DLManagedTensor, DLPackDeleter> dlpack;  // owned after taking the capsule

  template <class T, int N>
  View<T, N> view() const {
    typename View<T, N>::Extents s, st;
    for (int d = 0; d < N; d++) s[d] = shape[d], st[d] = strides[d];
    return View<T, N>(reinterpret_cast<T *>(data), s, st, memory);
  }
  template <class T, int N>
  View<const T, N> input() const {
    return view<const T, N>();
  }
  std::vector<std::int64_t> shape_vector() const { return {shape.begin(), shape.begin() + rank}; }
};

// The operands of an elementwise function, x and out (of one shape), described as at most `most`
// dimensions, since NumPy's ufuncs take any rank: dimensions of extent 1 dropped, the others
// ordered as out's strides are (outermost first) and neighbours merged where both layouts line up;
// a 0-d shape becomes (1,), an empty one (0,). Returns false (and changes nothing) where more
// dimensions remain.
bool merge_dimensions(Operand &x, Operand &out, int most);

// The arguments of one operation, named in its error messages as "hpipe.<op>: <argument>: ...".
class Call {
 public:
  // An argument the C++ library names otherwise (exp's output y is this function's out=).
  struct Rename {
    const char *cpp, *python;
  };
  // `device`: 'auto' (also when not given), 'cpu' or 'cuda'.
  Call(const char *op, py::handle device = {}, std::initializer_list<Rename> renames = {});

  // An input. The first fixes the dtype, the memory (host or one CUDA device) and the kind of
  // new outputs; the others must match it.
  Operand input(py::handle object, const char *name);
  // An input read as it is laid out, for an op that reads other layouts in place (batched_dot's
  // transposed views); dense_rows() then makes the op's choice.
  Operand input_any_layout(py::handle object, const char *name);
  // A CUDA array whose innermost stride is not 1 (a transposed view, an expanded gradient),
  // replaced by its library's dense copy (torch: contiguous(), on the call's stream): hpipe's CUDA
  // kernels read rows densely. Host arrays are copied by the C++ call where needed; other
  // libraries' arrays are left to its error, which names the argument.
  void dense_rows(Operand &a, const char *name);
  // `out=`: the caller's writable array of the given shape (checked like an input), or with None a
  // new array of the first input's kind: NumPy (64-byte aligned, like hpipe::Array) or
  // `first.new_empty(shape)`. In C order, or with `layout` (of that shape) in its order, as NumPy's
  // order='K' and torch's preserve_format make the results of elementwise functions.
  Operand output(py::handle object, const char *name, const std::vector<std::int64_t> &shape,
                 const Operand *layout = nullptr);
  // The caller's `out=` (not None) whose shape is checked later, with require_shape.
  Operand output(py::handle object, const char *name);
  // A number as the first input's kind: a NumPy scalar, or a 0-d array (into `out` when given).
  py::object scalar(double value, py::handle out);

  // Scalar arguments, taken as NumPy takes them and named when they are not: an int (anything with
  // __index__, in Int's range), a float (anything with __float__ or __index__), a bool (bool,
  // numpy.bool_ or an int), and one of a few strs (returns its position in `choices`).
  template <class Int = std::int64_t>
  Int integer(py::handle value, const char *name) const {
    using Limits = std::numeric_limits<Int>;
    return static_cast<Int>(integer_in(
        value, name, Limits::min(), std::min<std::uint64_t>(Limits::max(), std::numeric_limits<std::int64_t>::max())));
  }
  double real(py::handle value, const char *name) const;
  bool boolean(py::handle value, const char *name) const;
  int choice(py::handle value, const char *name, std::initializer_list<const char *> choices) const;

  // Rank checks, before views of a fixed rank are made: hpipe.Error naming the argument.
  void require_rank(const Operand &a, const char *name, int rank, const char *dims) const;
  void require_rank(const Operand &a, const char *name, int low, int high, const char *dims) const;
  void require_shape(const Operand &a, const char *name, const std::vector<std::int64_t> &shape) const;

  // Runs f, the function's calls into the C++ library: an hpipe::Error they throw is raised again
  // in this function's terms, "hpipe.<op>: <argument as Python names it>: ...".
  template <class F>
  decltype(auto) run(F &&f) const {
    try {
      return f();
    } catch (const Error &e) {
      raise_in_python_terms(e);
    }
  }
  // run() of f(T{}) for the element type.
  template <class F>
  decltype(auto) dispatch(F &&f) const {
    return run([&]() -> decltype(auto) {
      if (dtype_ == DType::f32) return f(float{});
      return f(double{});
    });
  }

  DType dtype() const { return dtype_; }
  const Options &options() const { return options_; }
  [[noreturn]] void type_error(const char *name, const std::string &what) const;
  [[noreturn]] void value_error(const char *name, const std::string &what) const;

 private:
  std::int64_t integer_in(py::handle value, const char *name, std::int64_t low, std::int64_t high) const;
  [[noreturn]] void raise_in_python_terms(const Error &error) const;
  Operand read(py::handle object, const char *name, bool writable);
  void match_first(const Operand &a, const char *name);
  // The stream of the call: the current stream of the first CUDA array's library, asked once.
  std::intptr_t stream_for(py::handle object, int device_id);

  const char *op_;  // a string literal
  std::array<Rename, 6> renames_{};
  std::size_t rename_count_ = 0;
  Options options_;
  bool have_first_ = false;
  DType dtype_ = DType::f32;
  py::handle first_;
  const char *first_name_ = "";
  bool first_numpy_ = true;
  Memory memory_ = Memory::host;
  int device_id_ = 0;
  std::optional<std::intptr_t> stream_;
};

// A new NumPy array owning 64-byte aligned, uninitialised storage.
py::array new_numpy(DType dtype, const std::vector<std::int64_t> &shape, const std::vector<std::int64_t> &strides = {});
// An hpipe::Array handed to NumPy without a copy.
template <class T, int N>
py::array to_numpy(Array<T, N> &&array) {
  auto *owner = new Array<T, N>(std::move(array));
  py::capsule base(owner, [](void *p) { delete static_cast<Array<T, N> *>(p); });
  return py::array_t<T>(std::vector<py::ssize_t>(owner->shape().begin(), owner->shape().end()), owner->data(), base);
}

std::string shape_string(const std::vector<std::int64_t> &shape);
// "'a'", "'a' or 'b'", "'a', 'b' or 'c'" (conjunction "or")
std::string quoted_list(const std::vector<std::string> &items, const char *conjunction);
const char *to_string(DType dtype);

}  // namespace hpipe::python
