// hpipe._core: the C++ API (hpipe/hpipe.h) for Python. Every function reads its arrays in place
// (arrays.h), checks what only the binding knows (ranks, kinds, dtypes), runs the C++ call with
// the GIL released, and returns `out` (given or new). The shapes, checks and messages of the
// operations themselves are the C++ API's.
#include <algorithm>
#include <cstdio>
#include <utility>

#include "arrays.h"
#include "docstrings.h"

namespace hpipe::python {
namespace {

using Shape = std::vector<std::int64_t>;

// The GIL released for a scope, as py::gil_scoped_release, but taken back by a destructor that may
// let an exception out: while the interpreter shuts down, CPython ends a daemon thread that asks
// for the GIL (pthread_exit), and that unwinding out of gil_scoped_release's noexcept destructor
// aborted the process ("terminate called without an active exception").
class GilReleased {
 public:
  GilReleased() : state_(PyEval_SaveThread()) {}
  ~GilReleased() noexcept(false) { PyEval_RestoreThread(state_); }
  GilReleased(const GilReleased &) = delete;
  GilReleased &operator=(const GilReleased &) = delete;

 private:
  PyThreadState *state_;
};

Dispersion dispersion(const Call &call, py::handle step, py::handle axis) {
  static constexpr Axis kAxes[] = {Axis::width, Axis::height};
  return {call.integer<int>(step, "step"), kAxes[call.choice(axis, "axis", {"width", "height"})]};
}

template <class T>
Mask<T> mask_of(const Operand &mask) {
  if (mask.rank == 2) return Mask<T>(mask.input<T, 2>());
  return Mask<T>(mask.input<T, 3>());
}

Operand read_mask(Call &call, py::handle object) {
  Operand mask = call.input(object, "mask");
  call.require_rank(mask, "mask", 2, 3, "((H, W) shared, or (C, H, W) per band)");
  return mask;
}

template <std::size_t N>
Shape to_shape(const std::array<std::int64_t, N> &a) {
  return Shape(a.begin(), a.end());
}

// Runs f(std::integral_constant<int, N>) for rank N in [1, 4].
template <class F>
void with_rank(int rank, F &&f) {
  switch (rank) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    default: return f(std::integral_constant<int, 4>{});
  }
}

// ---- CASSI ----

py::object cassi_forward(py::handle x_object, py::handle mask_object, py::handle step, py::handle axis,
                         py::handle out_object, py::handle device) {
  Call call("cassi_forward", device, {{"y", "out"}, {"cube", "x"}});
  const Dispersion d = dispersion(call, step, axis);
  const Operand x = call.input(x_object, "x");
  call.require_rank(x, "x", 4, "(B, C, H, W)");
  const Operand mask = read_mask(call, mask_object);
  const Operand out = call.output(out_object, "out", call.run([&] {
    return to_shape(cassi_measurement_shape({x.shape[0], x.shape[1], x.shape[2], x.shape[3]}, d));
  }));
  call.dispatch([&](auto zero) {
    using T = decltype(zero);
    const GilReleased nogil;
    hpipe::cassi_forward(x.input<T, 4>(), mask_of<T>(mask), d, out.view<T, 3>(), call.options());
  });
  return out.object;
}

// The band count C of a cube made from a measurement: `bands`, else out's, else a per-band mask's.
std::int64_t band_count(const Call &call, py::handle bands, const Operand *out, const Operand &mask) {
  if (!bands.is_none()) {
    const auto c = call.integer(bands, "bands");
    if (c < 1) call.value_error("bands", "expected at least 1, got " + std::to_string(c));
    if (out && out->shape[1] != c)
      call.value_error("bands", "is " + std::to_string(c) + " but out has " + std::to_string(out->shape[1]));
    return c;
  }
  if (out) return out->shape[1];
  if (mask.rank == 3) return mask.shape[0];
  call.value_error("bands", "is needed with a shared (H, W) mask and no out=; pass bands=C");
}

// The cube (B, C, H, W) made from measurement y: out=, checked, or a new one.
Operand cube_output(Call &call, const Operand &y, const Operand &mask, py::handle bands, Dispersion d,
                    py::handle out_object) {
  const auto shape = [&](std::int64_t c) {
    return call.run([&] { return to_shape(cassi_cube_shape({y.shape[0], y.shape[1], y.shape[2]}, c, d)); });
  };
  if (out_object.is_none()) return call.output(out_object, "out", shape(band_count(call, bands, nullptr, mask)));
  Operand out = call.output(out_object, "out");
  call.require_rank(out, "out", 4, "(B, C, H, W)");
  call.require_shape(out, "out", shape(band_count(call, bands, &out, mask)));
  return out;
}

// adjoint, pinv, pinv_alpha: measurement (B, H, W') and mask -> cube (B, C, H, W).
template <class Run>
py::object measurement_to_cube(const char *op, Run run, py::handle y_object, py::handle mask_object, py::handle bands,
                               py::handle step, py::handle axis, py::handle out_object, py::handle device) {
  Call call(op, device, {{"x", "out"}, {"measurement", "y"}});
  const Dispersion d = dispersion(call, step, axis);
  const Operand y = call.input(y_object, "y");
  call.require_rank(y, "y", 3, "(B, H, W') or (B, H', W)");
  const Operand mask = read_mask(call, mask_object);
  const Operand out = cube_output(call, y, mask, bands, d, out_object);
  call.dispatch([&](auto zero) {
    using T = decltype(zero);
    const GilReleased nogil;
    run(y.input<T, 3>(), mask_of<T>(mask), d, out.view<T, 4>(), call.options());
  });
  return out.object;
}

py::object cassi_phi(py::handle mask_object, py::handle bands, py::handle step, py::handle axis, py::handle out_object,
                     py::handle device) {
  Call call("cassi_phi", device, {{"phi", "out"}, {"cube", "bands"}});
  const Dispersion d = dispersion(call, step, axis);
  const Operand mask = read_mask(call, mask_object);
  const std::int64_t h = mask.shape[mask.rank - 2], w = mask.shape[mask.rank - 1];
  const auto c = band_count(call, bands, nullptr, mask);
  const auto y = call.run([&] { return cassi_measurement_shape({1, c, h, w}, d); });
  const Operand out = call.output(out_object, "out", {y[1], y[2]});
  call.dispatch([&](auto zero) {
    using T = decltype(zero);
    const GilReleased nogil;
    hpipe::cassi_phi(mask_of<T>(mask), c, d, out.view<T, 2>(), call.options());
  });
  return out.object;
}

// shift (B, C, H, W) -> (B, C, H', W') and shift_back, its inverse.
py::object cassi_shift_either(bool back, py::handle x_object, py::handle step, py::handle axis, py::handle out_object,
                              py::handle device) {
  const char *name = back ? "shifted" : "x";
  Call call = back ? Call("cassi_shift_back", device, {{"x", "out"}, {"measurement", "shifted"}})
                   : Call("cassi_shift", device, {{"shifted", "out"}, {"cube", "x"}});
  const Dispersion d = dispersion(call, step, axis);
  const Operand x = call.input(x_object, name);
  call.require_rank(x, name, 4, back ? "(B, C, H, W') or (B, C, H', W)" : "(B, C, H, W)");
  const Shape shape = call.run([&]() -> Shape {
    if (back) return to_shape(cassi_cube_shape({x.shape[0], x.shape[2], x.shape[3]}, x.shape[1], d));
    const auto y = cassi_measurement_shape({x.shape[0], x.shape[1], x.shape[2], x.shape[3]}, d);
    return {x.shape[0], x.shape[1], y[1], y[2]};
  });
  const Operand out = call.output(out_object, "out", shape);
  call.dispatch([&](auto zero) {
    using T = decltype(zero);
    const GilReleased nogil;
    if (back)
      hpipe::cassi_shift_back(x.input<T, 4>(), d, out.view<T, 4>(), call.options());
    else
      hpipe::cassi_shift(x.input<T, 4>(), d, out.view<T, 4>(), call.options());
  });
  return out.object;
}

// ---- dot, conv1d ----

py::object batched_dot(py::handle a_object, py::handle b_object, py::handle out_object, py::handle device) {
  Call call("batched_dot", device);
  // On CUDA, two transposed views are read in place (a kernel over columns); any other mix is
  // read row by row.
  Operand a = call.input_any_layout(a_object, "a");
  call.require_rank(a, "a", 2, "(N, K)");
  Operand b = call.input_any_layout(b_object, "b");
  call.require_rank(b, "b", 2, "(N, K)");
  const auto column_major = [](const Operand &o) {
    return (o.strides[0] == 1 || o.shape[0] == 1) && o.strides[1] != 1 && o.shape[1] > 1;
  };
  if (!(column_major(a) && column_major(b))) {
    call.dense_rows(a, "a");
    call.dense_rows(b, "b");
  }
  const Operand out = call.output(out_object, "out", {a.shape[0]});
  call.dispatch([&](auto zero) {
    using T = decltype(zero);
    const GilReleased nogil;
    hpipe::batched_dot(a.input<T, 2>(), b.input<T, 2>(), out.view<T, 1>(), call.options());
  });
  return out.object;
}

py::object conv1d(py::handle a_object, py::handle v_object, py::handle mode_object, py::handle out_object,
                  py::handle device) {
  Call call("conv1d", device);
  static constexpr ConvMode kModes[] = {ConvMode::full, ConvMode::same, ConvMode::valid};
  const ConvMode mode = kModes[call.choice(mode_object, "mode", {"full", "same", "valid"})];
  const Operand a = call.input(a_object, "a");
  call.require_rank(a, "a", 2, "(N, La)");
  const Operand v = call.input(v_object, "v");
  call.require_rank(v, "v", 1, 2, "((N, Lv) per row, or (Lv,) shared)");
  // Lengths below 1 are left to hpipe::conv1d, which names the argument: no columns for them.
  const std::int64_t la = a.shape[1], lv = v.shape[v.rank - 1];
  const Operand out =
      call.output(out_object, "out", {a.shape[0], la >= 1 && lv >= 1 ? conv1d_length(la, lv, mode) : 0});
  call.dispatch([&](auto zero) {
    using T = decltype(zero);
    const GilReleased nogil;
    if (v.rank == 2)
      hpipe::conv1d(a.input<T, 2>(), v.input<T, 2>(), mode, out.view<T, 2>(), call.options());
    else
      hpipe::conv1d(a.input<T, 2>(), v.input<T, 1>(), mode, out.view<T, 2>(), call.options());
  });
  return out.object;
}

// ---- math ----

enum class Elementwise { exp, log, erf };

py::object elementwise(Elementwise fn, const char *op, py::handle x_object, py::handle out_object, py::handle device) {
  Call call(op, device, {{"y", "out"}});
  Operand x = call.input(x_object, "x");
  Operand out = call.output(out_object, "out", x.shape_vector(), &x);
  const bool zero_d = x.rank == 0;
  if (!merge_dimensions(x, out, 4))  // which leaves them as they were
    call.value_error(x.c_contiguous() ? "out" : "x",
                     "the layouts of x and out of shape " + shape_string(x.shape_vector()) +
                         " do not merge into 4 dimensions; any rank is taken where they do (contiguous arrays, "
                         "slices of them): pass contiguous copies");
  call.dispatch([&](auto zero) {
    using T = decltype(zero);
    with_rank(x.rank, [&](auto rank) {
      constexpr int N = decltype(rank)::value;
      const GilReleased nogil;
      const auto in = x.input<T, N>();
      const auto y = out.view<T, N>();
      switch (fn) {
        case Elementwise::exp: return hpipe::exp(in, y, call.options());
        case Elementwise::log: return hpipe::log(in, y, call.options());
        case Elementwise::erf: return hpipe::erf(in, y, call.options());
      }
    });
  });
  // NumPy's ufuncs return a scalar for a 0-d array (torch a 0-d tensor), and out= itself.
  if (out_object.is_none() && x.numpy && zero_d) return out.object[py::tuple()];
  return out.object;
}

py::object logsumexp(py::handle x_object, const py::object &axis_object, py::handle out_object, py::handle device) {
  Call call("logsumexp", device);
  Operand x = call.input(x_object, "x");
  // Every element (axis None) of any rank, as SciPy's; along an axis, 1 to 4 dimensions.
  int axis = 0;
  if (!axis_object.is_none()) {
    call.require_rank(x, "x", 1, 4, "with an axis");
    const std::int64_t a = call.integer(axis_object, "axis");
    if (a < -x.rank || a >= x.rank)
      call.value_error("axis", "expected -" + std::to_string(x.rank) + " to " + std::to_string(x.rank - 1) +
                                   " for x of shape " + shape_string(x.shape_vector()) + ", got " + std::to_string(a));
    axis = static_cast<int>(a < 0 ? a + x.rank : a);
  } else if (x.rank != 1) {
    // Every element: a C-contiguous x is one long row (a 0-d x one element); another layout is
    // copied so first, by its library (NumPy's or torch's, as scipy.special.logsumexp reads any).
    if (!x.c_contiguous()) {
      if (x.numpy) {
        x = call.input(py::array::ensure(x.object, py::array::c_style), "x");
      } else if (py::hasattr(x.object, "contiguous")) {
        x = call.input(x.object.attr("contiguous")(), "x");
      } else {
        call.value_error("axis", std::string("None reduces every element, which needs a C-contiguous x; pass ") +
                                     (x.rank <= 4 ? "an axis, or " : "") + "a contiguous copy of x");
      }
    }
    std::int64_t n = 1;
    for (int d = 0; d < x.rank; d++) n *= x.shape[d];
    x.rank = 1, x.shape[0] = n, x.strides[0] = 1;
  }
  if (x.rank == 1) {
    const double value = call.dispatch([&](auto zero) -> double {
      using T = decltype(zero);
      const GilReleased nogil;
      return hpipe::logsumexp(x.input<T, 1>(), call.options());
    });
    return call.scalar(value, out_object);
  }
  Shape shape = x.shape_vector();
  shape.erase(shape.begin() + axis);
  const Operand out = call.output(out_object, "out", shape);
  call.dispatch([&](auto zero) {
    using T = decltype(zero);
    with_rank(x.rank, [&](auto rank) {
      constexpr int N = std::max(decltype(rank)::value, 2);  // rank 1 returned above
      const GilReleased nogil;
      hpipe::logsumexp(x.input<T, N>(), axis, out.view<T, N - 1>(), call.options());
    });
  });
  return out.object;
}

// ---- reconstruction ----

// Called by the C++ loop after every iteration (GIL released): lets Ctrl-C stop it, draws the
// progress bar, and calls the caller's callback; an exception from either ends the run. It holds
// the callback as a handle (the caller's frame keeps it alive) so copies need no GIL.
class Progress {
 public:
  Progress(const char *op, py::handle callback, bool bar) : op_(op), callback_(callback), bar_(bar) {}
  void operator()(const IterationInfo &info) const {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (bar_) {
      constexpr int kWidth = 30;
      const int done = info.iterations ? kWidth * info.iteration / info.iterations : kWidth;
      char line[160];
      std::snprintf(line, sizeof line, "\rhpipe.%s [%s%s] %d/%d residual %.4e%s", op_, std::string(done, '#').c_str(),
                    std::string(kWidth - done, '.').c_str(), info.iteration, info.iterations, info.residual,
                    info.iteration == info.iterations ? "\n" : "");
      auto stderr_ = py::module_::import("sys").attr("stderr");
      stderr_.attr("write")(line);
      stderr_.attr("flush")();
    }
    if (!callback_.is_none()) callback_(info);
  }

 private:
  const char *op_;
  py::handle callback_;
  bool bar_;
};

// gap_tv's and admm_tv's other arguments as given; `knob` is GAP's `accelerate` or ADMM's `gamma`.
struct ReconArgs {
  py::handle bands, step, axis, iterations, lam, knob, tv_weight, tv_iterations, vectorial, callback, progress;
};

py::object reconstruct_tv(ReconMethod method, py::handle y_object, py::handle mask_object, const ReconArgs &args,
                          py::handle out_object, py::handle device) {
  const char *op = method == ReconMethod::gap_tv ? "gap_tv" : "admm_tv";
  Call call(op, device,
            {{"x", "out"},
             {"measurement", "y"},
             {"lambda", "lam"},
             {"tv.weight", "tv_weight"},
             {"tv.iterations", "tv_iterations"}});
  ReconParams params;
  params.dispersion = dispersion(call, args.step, args.axis);
  params.iterations = call.integer<int>(args.iterations, "iterations");
  params.lambda = call.real(args.lam, "lam");
  if (method == ReconMethod::gap_tv)
    params.accelerate = call.boolean(args.knob, "accelerate");
  else
    params.gamma = call.real(args.knob, "gamma");
  params.tv = {call.real(args.tv_weight, "tv_weight"), call.integer<int>(args.tv_iterations, "tv_iterations"),
               call.boolean(args.vectorial, "vectorial")};
  if (!args.callback.is_none() && !PyCallable_Check(args.callback.ptr()))
    call.type_error("callback", "expected a callable or None");
  const Operand y = call.input(y_object, "y");
  call.require_rank(y, "y", 3, "(B, H, W') or (B, H', W)");
  const Operand mask = read_mask(call, mask_object);
  const Operand out = cube_output(call, y, mask, args.bands, params.dispersion, out_object);
  const bool bar = call.boolean(args.progress, "progress");
  // The callback runs anyway (Ctrl-C); the residual, an A x per iteration, only where it is shown.
  params.report_residual = bar || !args.callback.is_none();
  const IterationCallback progress = Progress(op, args.callback, bar);
  call.dispatch([&](auto zero) {
    using T = decltype(zero);
    const GilReleased nogil;
    if (method == ReconMethod::gap_tv)
      hpipe::gap_tv(y.input<T, 3>(), mask_of<T>(mask), params, out.view<T, 4>(), progress, call.options());
    else
      hpipe::admm_tv(y.input<T, 3>(), mask_of<T>(mask), params, out.view<T, 4>(), progress, call.options());
  });
  return out.object;
}

py::object tv_denoise(py::handle x_object, py::handle weight, py::handle iterations, py::handle vectorial,
                      py::handle out_object, py::handle device) {
  Call call("tv_denoise", device, {{"tv.weight", "weight"}, {"tv.iterations", "iterations"}});
  const TvParams params{call.real(weight, "weight"), call.integer<int>(iterations, "iterations"),
                        call.boolean(vectorial, "vectorial")};
  const Operand x = call.input(x_object, "x");
  call.require_rank(x, "x", 4, "(B, C, H, W)");
  const Operand out = call.output(out_object, "out", x.shape_vector());
  call.dispatch([&](auto zero) {
    using T = decltype(zero);
    const GilReleased nogil;
    hpipe::tv_denoise(x.input<T, 4>(), params, out.view<T, 4>(), call.options());
  });
  return out.object;
}

// psnr and ssim: two (H, W) host images -> a number.
template <class Run>
double image_quality(const char *op, Run run, py::handle estimate_object, py::handle truth_object,
                     const char *scale_name, py::handle scale_object, py::handle device) {
  Call call(op, device);
  if (call.options().device == Device::cuda) call.value_error("device", "runs on the CPU only");
  const double scale = call.real(scale_object, scale_name);
  const Operand estimate = call.input(estimate_object, "estimate");
  call.require_rank(estimate, "estimate", 2, "(H, W)");
  const Operand truth = call.input(truth_object, "truth");
  call.require_rank(truth, "truth", 2, "(H, W)");
  return call.dispatch([&](auto zero) {
    using T = decltype(zero);
    const GilReleased nogil;
    return run(estimate.input<T, 2>(), truth.input<T, 2>(), scale);
  });
}

py::tuple synth(py::handle bands_object, py::handle height_object, py::handle width_object, py::handle seed_object,
                py::handle device) {
  const Call call("synth", device);
  if (call.options().device == Device::cuda) call.value_error("device", "runs on the CPU only");
  const auto bands = call.integer(bands_object, "bands"), height = call.integer(height_object, "height"),
             width = call.integer(width_object, "width");
  const auto seed = call.integer<std::uint64_t>(seed_object, "seed");
  Array<float, 3> scene;
  Array<float, 2> mask;
  {
    const GilReleased nogil;
    scene = synth_scene(bands, height, width);
    mask = synth_mask(height, width, seed);
  }
  return py::make_tuple(to_numpy(std::move(scene)), to_numpy(std::move(mask)));
}

// A function's parameters, read from its signature "(x, *, out=None, device='auto')": name,
// whether it has a default, whether keyword-only.
struct Parameter {
  std::string name;
  bool required, keyword_only;
};
std::vector<Parameter> parameters_in(const std::string &signature) {
  std::vector<Parameter> parameters;
  const auto open = signature.find('('), close = signature.find(')');
  bool keyword_only = false;
  for (std::size_t start = open + 1; start < close;) {
    const std::size_t comma = std::min(signature.find(", ", start), close);
    const std::string item = signature.substr(start, comma - start);
    if (item == "*") {
      keyword_only = true;
    } else if (!item.empty()) {
      const auto equals = item.find('=');
      parameters.push_back({item.substr(0, equals), equals == std::string::npos, keyword_only});
    }
    start = comma + 2;
  }
  return parameters;
}

// Why arguments match none of a function's signatures, as Python says it for its own functions
// ("hpipe.exp() got an unexpected keyword argument 'outt'"); pybind11's message prints every
// argument, arrays included.
[[noreturn]] void arity_error(const std::string &function, const std::vector<Parameter> &parameters,
                              const py::args &args, const py::kwargs &kwargs) {
  const std::string who = "hpipe." + function + "() ";
  std::size_t positional = 0, positional_required = 0;
  for (const auto &p : parameters)
    if (!p.keyword_only) positional++, positional_required += p.required;
  if (args.size() > positional) {
    const std::string takes = positional_required == positional
                                  ? std::to_string(positional)
                                  : "from " + std::to_string(positional_required) + " to " + std::to_string(positional);
    throw py::type_error(who + "takes " + takes + " positional argument" + (positional == 1 ? "" : "s") + " but " +
                         std::to_string(args.size()) + (args.size() == 1 ? " was" : " were") + " given");
  }
  for (const auto &item : kwargs) {
    const std::string key = py::str(item.first);
    const auto p =
        std::find_if(parameters.begin(), parameters.end(), [&](const Parameter &q) { return q.name == key; });
    if (p == parameters.end()) throw py::type_error(who + "got an unexpected keyword argument '" + key + "'");
    if (!p->keyword_only && static_cast<std::size_t>(p - parameters.begin()) < args.size())
      throw py::type_error(who + "got multiple values for argument '" + key + "'");
  }
  std::vector<std::string> missing;
  for (std::size_t i = args.size(); i < parameters.size(); i++)
    if (parameters[i].required && !kwargs.contains(parameters[i].name.c_str())) missing.push_back(parameters[i].name);
  if (!missing.empty())
    throw py::type_error(who + "missing " + std::to_string(missing.size()) + " required argument" +
                         (missing.size() == 1 ? "" : "s") + ": " + quoted_list(missing, "and"));
  throw py::type_error(who + "was given arguments that match none of its parameters");
}

}  // namespace
}  // namespace hpipe::python

PYBIND11_MODULE(_core, m) {
  namespace py = pybind11;
  using namespace hpipe::python;
  using namespace pybind11::literals;
  // The docstrings start with their own signature line, which also gives inspect.signature().
  py::options options;
  options.disable_function_signatures();
  m.doc() = "hpipe's compiled core; use the package `hpipe`.";

  auto error = py::register_exception<hpipe::Error>(m, "Error", PyExc_ValueError);
  error.attr("__module__") = "hpipe";
  error.doc() = docs::kError;

  py::class_<hpipe::IterationInfo>(m, "IterationInfo", docs::kIterationInfo)
      .def_readonly("iteration", &hpipe::IterationInfo::iteration)
      .def_readonly("iterations", &hpipe::IterationInfo::iterations)
      .def_readonly("residual", &hpipe::IterationInfo::residual)
      .def("__repr__", [](const hpipe::IterationInfo &i) {
        return "IterationInfo(iteration=" + std::to_string(i.iteration) +
               ", iterations=" + std::to_string(i.iterations) +
               ", residual=" + std::string(py::repr(py::float_(i.residual))) + ")";
      });

  const auto out = py::arg("out") = py::none();
  const auto device = py::arg("device") = "auto";
  const auto step = py::arg("step") = 2;
  const auto axis = py::arg("axis") = "width";
  const auto bands = py::arg("bands") = py::none();

  m.def("cassi_forward", &cassi_forward, docs::kCassiForward, "x"_a, "mask"_a, step, axis, py::kw_only(), out, device);
  // adjoint, pinv, pinv_alpha: a measurement to a cube.
  const auto def_measurement_to_cube = [&](const char *name, const char *doc, auto run) {
    m.def(
        name,
        [name, run](py::handle y, py::handle mask, py::handle bands, py::handle step, py::handle axis, py::handle out,
                    py::handle device) {
          return measurement_to_cube(name, run, y, mask, bands, step, axis, out, device);
        },
        doc, "y"_a, "mask"_a, bands, step, axis, py::kw_only(), out, device);
  };
  def_measurement_to_cube("cassi_adjoint", docs::kCassiAdjoint, [](auto... a) { hpipe::cassi_adjoint(a...); });
  def_measurement_to_cube("cassi_pinv", docs::kCassiPinv, [](auto... a) { hpipe::cassi_pinv(a...); });
  def_measurement_to_cube("cassi_pinv_alpha", docs::kCassiPinvAlpha, [](auto... a) { hpipe::cassi_pinv_alpha(a...); });
  m.def("cassi_phi", &cassi_phi, docs::kCassiPhi, "mask"_a, bands, step, axis, py::kw_only(), out, device);
  m.def(
      "cassi_shift",
      [](py::handle x, py::handle step, py::handle axis, py::handle out, py::handle device) {
        return cassi_shift_either(false, x, step, axis, out, device);
      },
      docs::kCassiShift, "x"_a, step, axis, py::kw_only(), out, device);
  m.def(
      "cassi_shift_back",
      [](py::handle shifted, py::handle step, py::handle axis, py::handle out, py::handle device) {
        return cassi_shift_either(true, shifted, step, axis, out, device);
      },
      docs::kCassiShiftBack, "shifted"_a, step, axis, py::kw_only(), out, device);

  m.def("batched_dot", &batched_dot, docs::kBatchedDot, "a"_a, "b"_a, py::kw_only(), out, device);
  m.def("conv1d", &conv1d, docs::kConv1d, "a"_a, "v"_a, "mode"_a = "full", py::kw_only(), out, device);

  m.def(
      "exp",
      [](py::handle x, py::handle out, py::handle device) {
        return elementwise(Elementwise::exp, "exp", x, out, device);
      },
      docs::kExp, "x"_a, py::kw_only(), out, device);
  m.def(
      "log",
      [](py::handle x, py::handle out, py::handle device) {
        return elementwise(Elementwise::log, "log", x, out, device);
      },
      docs::kLog, "x"_a, py::kw_only(), out, device);
  m.def(
      "erf",
      [](py::handle x, py::handle out, py::handle device) {
        return elementwise(Elementwise::erf, "erf", x, out, device);
      },
      docs::kErf, "x"_a, py::kw_only(), out, device);
  m.def("logsumexp", &logsumexp, docs::kLogsumexp, "x"_a, "axis"_a = py::none(), py::kw_only(), out, device);

  m.def("tv_denoise", &tv_denoise, docs::kTvDenoise, "x"_a, "weight"_a = 0.1, "iterations"_a = 5, "vectorial"_a = false,
        py::kw_only(), out, device);
  // gap_tv and admm_tv differ in one knob: GAP's `accelerate`, ADMM's `gamma`.
  const hpipe::ReconParams defaults;
  const auto def_recon = [&](const char *name, const char *doc, hpipe::ReconMethod method, py::arg_v knob) {
    m.def(
        name,
        [method](py::handle y, py::handle mask, py::handle bands, py::handle step, py::handle axis,
                 py::handle iterations, py::handle lam, py::handle knob, py::handle tv_weight, py::handle tv_iterations,
                 py::handle vectorial, py::handle callback, py::handle progress, py::handle out, py::handle device) {
          const ReconArgs args{bands,     step,          axis,      iterations, lam,     knob,
                               tv_weight, tv_iterations, vectorial, callback,   progress};
          return reconstruct_tv(method, y, mask, args, out, device);
        },
        doc, "y"_a, "mask"_a, bands, step, axis, "iterations"_a = defaults.iterations, "lam"_a = defaults.lambda, knob,
        "tv_weight"_a = defaults.tv.weight, "tv_iterations"_a = defaults.tv.iterations,
        "vectorial"_a = defaults.tv.vectorial, py::kw_only(), "callback"_a = py::none(), "progress"_a = false, out,
        device);
  };
  def_recon("gap_tv", docs::kGapTv, hpipe::ReconMethod::gap_tv, "accelerate"_a = defaults.accelerate);
  def_recon("admm_tv", docs::kAdmmTv, hpipe::ReconMethod::admm_tv, "gamma"_a = defaults.gamma);
  // psnr and ssim: a number from two images and a scale.
  const auto def_quality = [&](const char *name, const char *doc, const char *scale, auto run) {
    m.def(
        name,
        [name, scale, run](py::handle estimate, py::handle truth, py::handle scale_value, py::handle device) {
          return image_quality(name, run, estimate, truth, scale, scale_value, device);
        },
        doc, "estimate"_a, "truth"_a, py::arg(scale) = 1.0, py::kw_only(), device);
  };
  def_quality("psnr", docs::kPsnr, "peak", [](auto e, auto t, double peak) { return hpipe::psnr(e, t, peak); });
  def_quality("ssim", docs::kSsim, "data_range", [](auto e, auto t, double range) { return hpipe::ssim(e, t, range); });
  m.def("synth", &synth, docs::kSynth, "bands"_a = 28, "height"_a = 256, "width"_a = 256, "seed"_a = 1, py::kw_only(),
        device);

  m.def(
      "set_num_threads",
      [](py::handle n) {
        const Call call("set_num_threads", {}, {{"threads", "n"}});
        call.run([&] { hpipe::set_num_threads(call.integer<int>(n, "n")); });
      },
      docs::kSetNumThreads, "n"_a);
  m.def("num_threads", &hpipe::num_threads, docs::kNumThreads);
  m.def("cuda_available", &hpipe::cuda_available, docs::kCudaAvailable);
  m.def("cuda_unavailable_reason", &hpipe::cuda_unavailable_reason, docs::kCudaUnavailableReason);

  // Each function's last overload, which any arguments match: pybind11 tries it only after the
  // function's own, so only for arguments that fit none of its parameters.
  for (const auto &item : py::dict(m.attr("__dict__"))) {
    const std::string name = py::str(item.first);
    if (!PyCFunction_Check(item.second.ptr()) || name.rfind("__", 0) == 0) continue;
    // The docstring's signature line, which Python keeps apart: "(x, *, out=None, device='auto')".
    const py::object signature = py::getattr(item.second, "__text_signature__", py::none());
    if (signature.is_none()) continue;
    m.def(
        name.c_str(),
        [name, parameters = parameters_in(py::str(signature))](const py::args &args, const py::kwargs &kwargs)
            -> py::object { arity_error(name, parameters, args, kwargs); },
        py::sibling(item.second));
  }
}
