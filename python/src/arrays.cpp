#include "arrays.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <numeric>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hpipe::python {
namespace {

std::string type_name(py::handle object) {
  if (object.is_none()) return "None";
  const py::handle type = py::type::handle_of(object);
  const std::string module = py::str(type.attr("__module__"));
  const std::string name = py::str(type.attr("__qualname__"));
  return module == "builtins" ? name : module + "." + name;
}

std::string dlpack_dtype_string(const DLDataType &t) {
  std::string name;
  switch (t.code) {
    case kDLInt: name = "int"; break;
    case kDLUInt: name = "uint"; break;
    case kDLFloat: name = "float"; break;
    case kDLBfloat: name = "bfloat"; break;
    case kDLComplex: name = "complex"; break;
    case kDLBool: return "bool";
    default: name = "type code " + std::to_string(t.code) + " of ";
  }
  name += std::to_string(t.bits);
  if (t.lanes != 1) name += "x" + std::to_string(t.lanes);
  return name;
}

// "1.5 GiB", "1 PiB"
std::string size_string(double bytes) {
  double scaled = bytes / 0x1p30;
  const char *unit = "GiB";
  for (const char *larger : {"TiB", "PiB", "EiB"})
    if (scaled >= 1024) scaled /= 1024, unit = larger;
  char text[32];
  std::snprintf(text, sizeof text, "%.3g %s", scaled, unit);
  return text;
}

std::string memory_string(Memory memory, int device_id) {
  return memory == Memory::host ? "host memory" : "CUDA memory on device " + std::to_string(device_id);
}

// The CUDA stream hpipe runs on for an array of the caller's library (its current stream).
std::intptr_t consumer_stream(py::handle object, int device_id) {
  static const py::handle cuda_stream = py::object(py::module_::import("hpipe._arrays").attr("cuda_stream")).release();
  return cuda_stream(object, device_id).cast<std::intptr_t>();
}

}  // namespace

const char *to_string(DType dtype) { return dtype == DType::f32 ? "float32" : "float64"; }

std::string quoted_list(const std::vector<std::string> &items, const char *conjunction) {
  std::string text;
  for (std::size_t i = 0; i < items.size(); i++)
    text += (i == 0 ? "" : i + 1 == items.size() ? std::string(" ") + conjunction + " " : ", ") + "'" + items[i] + "'";
  return text;
}

std::string shape_string(const std::vector<std::int64_t> &shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); i++) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

bool Operand::empty() const { return std::find(shape.begin(), shape.begin() + rank, 0) != shape.begin() + rank; }

bool Operand::c_contiguous() const {
  if (empty()) return true;  // as NumPy says
  std::int64_t expected = 1;
  for (int d = rank - 1; d >= 0; d--) {
    if (shape[d] != 1 && strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

bool merge_dimensions(Operand &x, Operand &out, int most) {
  // Visited in out's order, outermost first: out= in x's order (a new one is) merges as x does.
  // (An out with a stride of 0 is refused by hpipe, in its own order.)
  std::array<int, kMaxRank> order{};
  std::iota(order.begin(), order.begin() + x.rank, 0);
  if (std::none_of(order.begin(), order.begin() + x.rank,
                   [&](int d) { return out.strides[d] == 0 && out.shape[d] > 1; }))
    std::stable_sort(order.begin(), order.begin() + x.rank,
                     [&](int a, int b) { return std::abs(out.strides[a]) > std::abs(out.strides[b]); });
  std::array<std::int64_t, kMaxRank> shape{}, x_strides{}, out_strides{};
  int rank = 0;
  for (int i = 0; i < x.rank; i++) {
    const int d = order[i];
    const std::int64_t extent = x.shape[d];
    if (extent == 1) continue;
    if (rank > 0 && x_strides[rank - 1] == x.strides[d] * extent && out_strides[rank - 1] == out.strides[d] * extent) {
      shape[rank - 1] *= extent;
    } else {
      shape[rank] = extent;
      rank++;
    }
    x_strides[rank - 1] = x.strides[d];
    out_strides[rank - 1] = out.strides[d];
  }
  if (x.empty()) {
    rank = 1, shape[0] = 0;
  } else if (rank == 0) {
    rank = 1, shape[0] = 1, x_strides[0] = out_strides[0] = 1;
  }
  if (rank > most) return false;
  x.rank = out.rank = rank;
  x.shape = out.shape = shape;
  x.strides = x_strides;
  out.strides = out_strides;
  return true;
}

Call::Call(const char *op, py::handle device, std::initializer_list<Rename> renames) : op_(op) {
  if (renames.size() > renames_.size()) throw std::logic_error("hpipe.Call: more renames than it holds");
  std::copy(renames.begin(), renames.end(), renames_.begin());
  rename_count_ = renames.size();
  if (!device) return;  // Options' default: automatic
  static constexpr Device kDevices[] = {Device::automatic, Device::cpu, Device::cuda};
  options_.device = kDevices[choice(device, "device", {"auto", "cpu", "cuda"})];
}

std::int64_t Call::integer_in(py::handle value, const char *name, std::int64_t low, std::int64_t high) const {
  if (!PyIndex_Check(value.ptr())) type_error(name, "expected an int, got " + type_name(value));
  const auto index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long i = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (i == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (overflow || i < low || i > high)
    value_error(name, "expected an int from " + std::to_string(low) + " to " + std::to_string(high) + ", got " +
                          std::string(py::str(index)));
  return i;
}

double Call::real(py::handle value, const char *name) const {
  if (PyFloat_CheckExact(value.ptr())) return PyFloat_AS_DOUBLE(value.ptr());
  // PyFloat_AsDouble takes __float__ and __index__; a str has neither, and None is no number.
  const double x = PyFloat_AsDouble(value.ptr());
  if (x == -1.0 && PyErr_Occurred()) {
    const bool overflow = PyErr_ExceptionMatches(PyExc_OverflowError);
    if (!overflow && !PyErr_ExceptionMatches(PyExc_TypeError)) throw py::error_already_set();
    PyErr_Clear();
    if (overflow) value_error(name, "is too large for a float");
    type_error(name, "expected a float, got " + type_name(value));
  }
  return x;
}

bool Call::boolean(py::handle value, const char *name) const {
  PyObject *const v = value.ptr();
  if (v == Py_True || v == Py_False) return v == Py_True;
  // numpy.bool_ (numpy.bool in NumPy 2) has no __index__; ints are flags as in `if`.
  const std::string type = Py_TYPE(v)->tp_name;
  if (type == "numpy.bool_" || type == "numpy.bool" || PyIndex_Check(v)) {
    const int truth = PyObject_IsTrue(v);
    if (truth < 0) throw py::error_already_set();
    return truth == 1;
  }
  type_error(name, "expected a bool, got " + type_name(value));
}

int Call::choice(py::handle value, const char *name, std::initializer_list<const char *> choices) const {
  const auto expected = [&] { return "expected " + quoted_list({choices.begin(), choices.end()}, "or"); };
  if (!PyUnicode_Check(value.ptr())) type_error(name, expected() + " (a str), got " + type_name(value));
  Py_ssize_t length = 0;
  const char *text = PyUnicode_AsUTF8AndSize(value.ptr(), &length);
  if (!text) throw py::error_already_set();
  const std::string_view given(text, static_cast<std::size_t>(length));
  for (std::size_t i = 0; i < choices.size(); i++)
    if (given == choices.begin()[i]) return static_cast<int>(i);
  value_error(name, expected() + ", got '" + std::string(given) + "'");
}

void Call::type_error(const char *name, const std::string &what) const {
  throw py::type_error(std::string("hpipe.") + op_ + ": " + name + ": " + what);
}

void Call::value_error(const char *name, const std::string &what) const {
  throw Error(std::string("hpipe.") + op_ + ": " + name + ": " + what);
}

void Call::raise_in_python_terms(const Error &error) const {
  // The library's messages are "hpipe::<op>: <argument>: <what>", <op> perhaps a helper the
  // function called (cassi_cube_shape); the argument is renamed, and those the text names
  // ("overlaps input x", "but output y has").
  const std::string_view message = error.what(), prefix = "hpipe::";
  const std::size_t op_end = message.find(": ");
  if (message.substr(0, prefix.size()) != prefix || op_end == std::string_view::npos) throw;  // already Python's
  std::string text(message.substr(op_end + 2));
  const auto is_name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; };
  for (std::size_t i = 0; i < rename_count_; i++) {
    const std::string cpp = renames_[i].cpp, python = renames_[i].python;
    if (text.compare(0, cpp.size() + 2, cpp + ": ") == 0) text.replace(0, cpp.size(), python);
    for (const std::string role : {"input ", "output "}) {
      for (std::size_t at = text.find(role + cpp); at != std::string::npos; at = text.find(role + cpp, at + 1)) {
        const std::size_t end = at + role.size() + cpp.size();
        if ((at > 0 && is_name_char(text[at - 1])) || (end < text.size() && is_name_char(text[end]))) continue;
        text.replace(at + role.size(), cpp.size(), python);
      }
    }
  }
  throw Error(std::string("hpipe.") + op_ + ": " + text);
}

void Call::require_rank(const Operand &a, const char *name, int rank, const char *dims) const {
  if (a.rank != rank)
    value_error(name, "expected " + std::to_string(rank) + " dimensions " + dims + ", got shape " +
                          shape_string(a.shape_vector()));
}

void Call::require_rank(const Operand &a, const char *name, int low, int high, const char *dims) const {
  if (a.rank < low || a.rank > high)
    value_error(name, "expected " + std::to_string(low) + " to " + std::to_string(high) + " dimensions" +
                          (*dims ? std::string(" ") + dims : std::string()) + ", got shape " +
                          shape_string(a.shape_vector()));
}

// A member of torch.Tensor read through its descriptor, found once on the class: the getter or the
// method is called on the tensor directly, without the lookup through the type's MRO and the
// instance's dict that PyObject_GetAttr makes for every read (tensors of a subclass, whose members
// may be overridden, are read by name). Each read gives a new reference, or nullptr with the
// error cleared.
class TensorMember {
 public:
  TensorMember(PyObject *tensor_type, const char *name)
      : name_(PyUnicode_InternFromString(name)), descriptor_(PyObject_GetAttr(tensor_type, name_)) {
    if (!descriptor_) PyErr_Clear();  // a torch without it
  }
  PyObject *get(PyObject *tensor, bool exact) const {
    const descrgetfunc getter = descriptor_ ? Py_TYPE(descriptor_)->tp_descr_get : nullptr;
    PyObject *value = exact && getter ? getter(descriptor_, tensor, reinterpret_cast<PyObject *>(Py_TYPE(tensor)))
                                      : PyObject_GetAttr(tensor, name_);
    if (!value) PyErr_Clear();
    return value;
  }
  PyObject *call(PyObject *tensor, bool exact) const {
    PyObject *value = exact && descriptor_ ? PyObject_Vectorcall(descriptor_, &tensor, 1, nullptr)
                                           : PyObject_CallMethodNoArgs(tensor, name_);
    if (!value) PyErr_Clear();
    return value;
  }

 private:
  PyObject *name_, *descriptor_;  // never released: they outlive the module
};

// A host or CUDA torch.Tensor is read from its own attributes (one that requires grad is refused,
// naming the way to differentiate through hpipe; __dlpack__ refuses it less clearly):
// Tensor.__dlpack__ and __dlpack_device__ are Python code, about 4 us a call together with torch
// 1.13 and some 20 us a CUDA tensor with torch 2.11 (hpipe.exp(x, out=y) on an H100: 63 -> 12 us
// queued), most of a small call's cost; the members read here are C. The torch objects are looked
// up once torch is imported and never released (they outlive the module). Returns false for
// anything else.
// A tensor whose negative bit is set (x.conj().imag, torch._neg_view(x): its elements are the
// negatives of its memory's) is read through resolve_neg(), a copy; as out= it is refused. A tensor
// that requires grad is refused while autograd records (outside torch.no_grad()).
template <class TypeError>
bool read_torch(py::handle object, Operand &a, bool writable, const TypeError &type_error) {
  struct Torch {
    PyObject *tensor, *parameter, *float32, *float64, *is_grad_enabled;
    TensorMember requires_grad, is_neg, resolve_neg, is_cuda, is_cpu, get_device, dtype, shape, stride, data_ptr;
  };
  static const Torch *torch = nullptr;  // found once torch is imported (the GIL is held)
  if (!torch)
    torch = []() -> const Torch * {
      const py::dict modules = py::module_::import("sys").attr("modules");
      if (!modules.contains("torch")) return nullptr;
      const py::object t = modules["torch"];
      PyObject *tensor = py::object(t.attr("Tensor")).release().ptr();
      return new Torch{tensor,
                       py::object(t.attr("nn").attr("Parameter")).release().ptr(),
                       py::object(t.attr("float32")).release().ptr(),
                       py::object(t.attr("float64")).release().ptr(),
                       py::object(t.attr("is_grad_enabled")).release().ptr(),
                       {tensor, "requires_grad"},
                       {tensor, "is_neg"},
                       {tensor, "resolve_neg"},
                       {tensor, "is_cuda"},
                       {tensor, "is_cpu"},
                       {tensor, "get_device"},
                       {tensor, "dtype"},
                       {tensor, "shape"},
                       {tensor, "stride"},
                       {tensor, "data_ptr"}};
    }();
  PyObject *const tensor = object.ptr();
  if (!torch || !PyObject_TypeCheck(tensor, reinterpret_cast<PyTypeObject *>(torch->tensor))) return false;
  const PyObject *type = reinterpret_cast<PyObject *>(Py_TYPE(tensor));
  const bool exact = type == torch->tensor || type == torch->parameter;
  const auto owned = [](PyObject *value) { return py::reinterpret_steal<py::object>(value); };
  if (owned(torch->requires_grad.get(tensor, exact)).ptr() == Py_True &&
      owned(PyObject_CallNoArgs(torch->is_grad_enabled)).ptr() == Py_True)
    type_error(
        "requires grad; the functions of hpipe.torch differentiate through hpipe, or pass a detached tensor (or call "
        "under torch.no_grad())");
  if (owned(torch->is_neg.call(tensor, exact)).ptr() == Py_True) {  // nullptr: a torch without the bit
    if (writable)
      type_error(
          "has its negative bit set (a lazily negated view, such as x.conj().imag), which hpipe cannot write "
          "through; pass a tensor without it");
    const py::object resolved = owned(torch->resolve_neg.call(tensor, exact));
    if (!resolved || !read_torch(resolved, a, writable, type_error)) return false;
    a.object = resolved;  // kept alive with the operand
    return true;
  }
  if (owned(torch->is_cpu.get(tensor, exact)).ptr() != Py_True) {  // the common case in one read
    if (owned(torch->is_cuda.get(tensor, exact)).ptr() != Py_True) return false;
    const py::object device = owned(torch->get_device.call(tensor, exact));
    if (!device || !PyLong_Check(device.ptr())) return false;
    a.memory = Memory::cuda;
    a.device_id = static_cast<int>(PyLong_AsLong(device.ptr()));
  }
  const py::object dtype = owned(torch->dtype.get(tensor, exact));
  if (!dtype.is(py::handle(torch->float32)) && !dtype.is(py::handle(torch->float64)))
    type_error("expected float32 or float64, got " + std::string(py::str(dtype)).substr(6));  // after "torch."
  a.dtype = dtype.is(py::handle(torch->float32)) ? DType::f32 : DType::f64;
  const py::object shape = owned(torch->shape.get(tensor, exact));
  const py::object strides = owned(torch->stride.call(tensor, exact));
  const py::object data = owned(torch->data_ptr.call(tensor, exact));
  if (!shape || !strides || !data || !PyTuple_Check(shape.ptr()) || !PyTuple_Check(strides.ptr()))
    return false;  // not the Tensor this expects: the DLPack path reads it
  a.rank = static_cast<int>(PyTuple_GET_SIZE(shape.ptr()));
  if (a.rank > kMaxRank || PyTuple_GET_SIZE(strides.ptr()) != a.rank) return false;  // the DLPack path says so
  for (int d = 0; d < a.rank; d++) {
    a.shape[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape.ptr(), d));
    a.strides[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(strides.ptr(), d));
  }
  a.data = reinterpret_cast<char *>(PyLong_AsUnsignedLongLong(data.ptr()));
  if (PyErr_Occurred()) throw py::error_already_set();
  return true;
}

Operand Call::read(py::handle object, const char *name, bool writable) {
  Operand a;
  a.object = py::reinterpret_borrow<py::object>(object);
  std::size_t itemsize = 0;
  if (py::isinstance<py::array>(object)) {
    // A subclass whose elements are not all data: NumPy's masked arrays (ufuncs keep their masks).
    if (Py_TYPE(object.ptr()) != py::detail::npy_api::get().PyArray_Type_ && py::hasattr(object, "_mask"))
      type_error(name, "is a numpy.ma.MaskedArray, whose mask hpipe would ignore; pass x.filled(value) or x.data");
    const auto *array = py::detail::array_proxy(object.ptr());
    const auto *descr = py::detail::array_descriptor_proxy(array->descr);
    // The dtype by its number: the descriptor's layout past type_num differs between NumPy 1 and 2.
    const int type = descr->type_num;
    if (type != py::detail::npy_api::NPY_FLOAT_ && type != py::detail::npy_api::NPY_DOUBLE_)
      type_error(name, "expected float32 or float64, got " + std::string(py::str(object.attr("dtype"))));
    if (descr->byteorder == '>')
      type_error(name, "expected native byte order, got " + std::string(py::str(object.attr("dtype"))) +
                           "; convert with x.astype(x.dtype.newbyteorder('='))");
    if (writable && !(array->flags & py::detail::npy_api::NPY_ARRAY_WRITEABLE_))
      value_error(name, "is read-only; pass a writable array");  // as NumPy's ufuncs say it
    if (array->nd > kMaxRank)
      value_error(name,
                  "has " + std::to_string(array->nd) + " dimensions; hpipe takes at most " + std::to_string(kMaxRank));
    itemsize = type == py::detail::npy_api::NPY_FLOAT_ ? 4 : 8;
    a.numpy = true;
    a.dtype = itemsize == 4 ? DType::f32 : DType::f64;
    a.data = array->data;
    a.rank = array->nd;
    for (int d = 0; d < a.rank; d++) {
      // A dimension of extent 0 or 1 never steps: its stride may be anything, as NumPy takes it.
      if (array->dimensions[d] > 1 && array->strides[d] % static_cast<Py_ssize_t>(itemsize) != 0)
        type_error(name, "strides in bytes must be multiples of the element size " + std::to_string(itemsize) +
                             ", got " + std::to_string(array->strides[d]) + " in dimension " + std::to_string(d));
      a.shape[d] = array->dimensions[d];
      a.strides[d] = array->strides[d] / static_cast<Py_ssize_t>(itemsize);
    }
  } else if (read_torch(object, a, writable, [&](const std::string &what) { type_error(name, what); })) {
    itemsize = a.dtype == DType::f32 ? 4 : 8;
    if (a.memory == Memory::cuda) a.stream = stream_for(object, a.device_id);
  } else if (py::hasattr(object, "__dlpack__")) {
    std::pair<int, int> device;
    try {
      device = object.attr("__dlpack_device__")().cast<std::pair<int, int>>();
    } catch (py::error_already_set &e) {  // torch's meta and other devices DLPack has no number for
      type_error(name, "expected host or CUDA memory, got an array whose __dlpack_device__ failed: " +
                           std::string(py::str(e.type().attr("__name__"))) + ": " + std::string(py::str(e.value())));
    }
    a.device_id = device.second;
    py::object stream = py::none();
    if (device.first == kDLCPU || device.first == kDLCUDAHost) {
      a.memory = Memory::host;
    } else if (device.first == kDLCUDA || device.first == kDLCUDAManaged) {
      a.memory = Memory::cuda;
      a.stream = stream_for(object, a.device_id);
      // DLPack's stream numbers: 1 is the legacy default stream (0 is ambiguous, not allowed).
      stream = py::int_(a.stream ? a.stream : 1);
    } else {
      type_error(name, "expected host or CUDA memory, got DLPack device type " + std::to_string(device.first));
    }
    py::object capsule;
    try {
      capsule = stream.is_none() ? object.attr("__dlpack__")() : object.attr("__dlpack__")(py::arg("stream") = stream);
    } catch (py::error_already_set &e) {  // its type and message; what() appends the traceback
      type_error(name, "its __dlpack__ export failed: " + std::string(py::str(e.type().attr("__name__"))) + ": " +
                           std::string(py::str(e.value())));
    }
    if (!PyCapsule_IsValid(capsule.ptr(), "dltensor"))
      type_error(name, "__dlpack__ did not return an unused \"dltensor\" capsule");
    // Taking ownership: the capsule is renamed and its DLManagedTensor deleted by us.
    a.dlpack.reset(static_cast<DLManagedTensor *>(PyCapsule_GetPointer(capsule.ptr(), "dltensor")));
    PyCapsule_SetName(capsule.ptr(), "used_dltensor");
    const DLTensor &t = a.dlpack->dl_tensor;
    if (t.dtype.code != kDLFloat || t.dtype.lanes != 1 || (t.dtype.bits != 32 && t.dtype.bits != 64))
      type_error(name, "expected float32 or float64, got " + dlpack_dtype_string(t.dtype));
    if (t.ndim > kMaxRank)
      value_error(name,
                  "has " + std::to_string(t.ndim) + " dimensions; hpipe takes at most " + std::to_string(kMaxRank));
    itemsize = t.dtype.bits / 8;
    a.dtype = t.dtype.bits == 32 ? DType::f32 : DType::f64;
    a.data = static_cast<char *>(t.data) + t.byte_offset;
    a.rank = t.ndim;
    std::int64_t dense = 1;
    for (int d = a.rank - 1; d >= 0; d--) {
      a.shape[d] = t.shape[d];
      a.strides[d] = t.strides ? t.strides[d] : dense;
      dense *= t.shape[d];
    }
  } else {
    type_error(name, "expected a NumPy array or an array with __dlpack__ (a torch.Tensor, a CuPy array), got " +
                         type_name(object));
  }
  if (reinterpret_cast<std::uintptr_t>(a.data) % itemsize != 0 && !a.empty())  // empty views may point anywhere
    type_error(name, "its data is not aligned to its element size " + std::to_string(itemsize));
  return a;
}

std::intptr_t Call::stream_for(py::handle object, int device_id) {
  if (!stream_.has_value()) stream_ = consumer_stream(object, device_id);
  return *stream_;
}

void Call::match_first(const Operand &a, const char *name) {
  if (!have_first_) {
    have_first_ = true;
    first_ = a.object;
    first_name_ = name;
    first_numpy_ = a.numpy;
    dtype_ = a.dtype;
    memory_ = a.memory;
    device_id_ = a.device_id;
    options_.cuda_stream = reinterpret_cast<void *>(a.stream);
    return;
  }
  if (a.dtype != dtype_)
    type_error(name,
               std::string("expected ") + to_string(dtype_) + " like " + first_name_ + ", got " + to_string(a.dtype));
  if (a.memory != memory_ || (a.memory == Memory::cuda && a.device_id != device_id_))
    type_error(name, "expected " + memory_string(memory_, device_id_) + " like " + first_name_ + ", got " +
                         memory_string(a.memory, a.device_id));
}

Operand Call::input(py::handle object, const char *name) {
  Operand a = input_any_layout(object, name);
  dense_rows(a, name);
  return a;
}

Operand Call::input_any_layout(py::handle object, const char *name) {
  Operand a = read(object, name, false);
  match_first(a, name);
  return a;
}

void Call::dense_rows(Operand &a, const char *name) {
  if (a.memory != Memory::cuda || a.rank == 0 || a.shape[a.rank - 1] == 1 || a.strides[a.rank - 1] == 1) return;
  if (!py::hasattr(a.object, "contiguous")) return;
  const py::object dense = a.object.attr("contiguous")();
  a = read(dense, name, false);
}

void Call::require_shape(const Operand &a, const char *name, const std::vector<std::int64_t> &shape) const {
  if (a.shape_vector() != shape)
    value_error(name, "expected shape " + shape_string(shape) + ", got " + shape_string(a.shape_vector()));
}

namespace {

// The strides (in elements) of a dense array of x's shape with its dimensions ordered as x's
// are, outermost first; none (C order) where x is C-contiguous or broadcast.
std::vector<std::int64_t> dense_strides_like(const Operand &x) {
  if (x.c_contiguous()) return {};
  for (int d = 0; d < x.rank; d++)
    if (x.strides[d] == 0 && x.shape[d] > 1) return {};
  std::array<int, kMaxRank> order{};
  std::iota(order.begin(), order.begin() + x.rank, 0);
  std::stable_sort(order.begin(), order.begin() + x.rank,
                   [&](int a, int b) { return std::abs(x.strides[a]) > std::abs(x.strides[b]); });
  std::vector<std::int64_t> strides(x.rank);
  std::int64_t step = 1;
  for (int i = x.rank - 1; i >= 0; i--) {
    strides[order[i]] = step;
    step *= x.shape[order[i]];
  }
  return strides;
}

}  // namespace

Operand Call::output(py::handle object, const char *name, const std::vector<std::int64_t> &shape,
                     const Operand *layout) {
  if (!object.is_none()) {
    Operand a = read(object, name, true);
    match_first(a, name);
    require_shape(a, name, shape);
    return a;
  }
  const std::vector<std::int64_t> strides = layout ? dense_strides_like(*layout) : std::vector<std::int64_t>{};
  if (first_numpy_) {
    py::array fresh;
    try {
      fresh = new_numpy(dtype_, shape, strides);
    } catch (const std::bad_alloc &) {  // as NumPy says it, with the op and the argument
      double bytes = dtype_ == DType::f32 ? 4.0 : 8.0;
      for (auto e : shape) bytes *= static_cast<double>(e);
      const std::string what = std::string("hpipe.") + op_ + ": " + name + ": unable to allocate " +
                               size_string(bytes) + " for a " + to_string(dtype_) + " array of shape " +
                               shape_string(shape);
      PyErr_SetString(PyExc_MemoryError, what.c_str());
      throw py::error_already_set();
    }
    return read(fresh, name, true);
  }
  if (!py::hasattr(first_, "new_empty"))
    type_error(name, "pass out=: hpipe makes new arrays like NumPy's and PyTorch's, and " + std::string(first_name_) +
                         " is a " + type_name(first_));
  py::tuple size(shape.size());
  for (std::size_t d = 0; d < shape.size(); d++) size[d] = shape[d];
  if (!strides.empty() && py::hasattr(first_, "new_empty_strided")) {
    py::tuple stride(strides.size());
    for (std::size_t d = 0; d < strides.size(); d++) stride[d] = strides[d];
    return read(first_.attr("new_empty_strided")(size, stride), name, true);
  }
  return read(first_.attr("new_empty")(size), name, true);
}

Operand Call::output(py::handle object, const char *name) {
  Operand a = read(object, name, true);
  match_first(a, name);
  return a;
}

py::object Call::scalar(double value, py::handle out) {
  Operand o = output(out, "out", {});
  if (o.memory == Memory::cuda) {
    o.object.attr("fill_")(value);
  } else if (dtype_ == DType::f32) {
    *reinterpret_cast<float *>(o.data) = static_cast<float>(value);
  } else {
    *reinterpret_cast<double *>(o.data) = value;
  }
  // NumPy's reductions return a scalar, not a 0-d array.
  if (out.is_none() && o.numpy) return o.object[py::tuple()];
  return o.object;
}

py::array new_numpy(DType dtype, const std::vector<std::int64_t> &shape, const std::vector<std::int64_t> &strides) {
  const std::size_t itemsize = dtype == DType::f32 ? sizeof(float) : sizeof(double);
  std::size_t bytes = itemsize;
  for (auto e : shape) bytes *= static_cast<std::size_t>(e);
  void *data = hpipe::detail::allocate_host(bytes);  // as Arrays are: aligned, large ones in huge pages
  py::capsule owner(data, [](void *p) { hpipe::detail::free_host(p); });
  const py::dtype type = dtype == DType::f32 ? py::dtype::of<float>() : py::dtype::of<double>();
  std::vector<py::ssize_t> byte_strides;
  for (auto s : strides) byte_strides.push_back(static_cast<py::ssize_t>(s * itemsize));
  return py::array(type, std::vector<py::ssize_t>(shape.begin(), shape.end()), byte_strides, data, owner);
}

}  // namespace hpipe::python
