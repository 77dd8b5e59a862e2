// hpipe cassi forward|adjoint|pinv|pinv-alpha|phi: the CASSI operators of hpipe/cassi.h.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <optional>

#include "commands.h"
#include "hpipe/cassi.h"

namespace hpipe::cli {

namespace {

using Shape3 = std::array<std::int64_t, 3>;
using Shape4 = std::array<std::int64_t, 4>;

struct Request {
  std::string mode;
  std::string mask_name;
  Dispersion d;
  std::optional<std::int64_t> bands;
  bool along_x() const { return d.axis == Axis::width; }
};

template <class T>
struct MaskData {
  Stack<T> stack;
  bool per_band() const { return stack.shape.size() == 3; }
  std::int64_t height() const { return stack.shape[stack.shape.size() - 2]; }
  std::int64_t width() const { return stack.shape.back(); }
  Mask<T> mask() const {
    if (per_band()) return Mask<T>(View<const T, 3>(stack.data.data(), {stack.shape[0], height(), width()}));
    return Mask<T>(View<const T, 2>(stack.data.data(), {height(), width()}));
  }
};

std::string size_text(std::int64_t h, std::int64_t w) { return std::to_string(h) + " x " + std::to_string(w); }

// The band count of the cube behind a measurement of H' x W' (or of phi when h, w are the mask's).
template <class T>
std::int64_t band_count(const Request &r, const MaskData<T> &m, std::int64_t hm, std::int64_t wm,
                        const std::string &measurement) {
  const std::int64_t s = std::abs(static_cast<std::int64_t>(r.d.step));
  const std::int64_t across = r.along_x() ? hm : wm, mask_across = r.along_x() ? m.height() : m.width();
  const std::int64_t along = r.along_x() ? wm : hm, mask_along = r.along_x() ? m.width() : m.height();
  const char *axis = r.along_x() ? "width" : "height";
  if (across != mask_across || along < mask_along)
    throw Failure(r.mask_name + ": mask size " + size_text(m.height(), m.width()) + " does not fit the " +
                  size_text(hm, wm) + " measurement " + measurement + " dispersed along " + axis +
                  " (mask shape wrong?)");
  const std::int64_t spread = along - mask_along;
  std::optional<std::int64_t> c = r.bands;
  if (!c && m.per_band()) c = m.stack.shape[0];
  if (!c && s != 0 && spread % s != 0)
    throw Failure(measurement + ": its " + axis + " " + std::to_string(along) + " is not the mask's " +
                  std::to_string(mask_along) + " + (C - 1) * |step| for any band count C with step " +
                  std::to_string(r.d.step));
  if (!c && s != 0) c = spread / s + 1;
  if (!c)
    throw UsageError("hpipe cassi " + r.mode + ": give --bands C (the measurement " + measurement +
                     " does not tell it with step " + std::to_string(r.d.step) + ")");
  if ((*c - 1) * s != spread)
    throw Failure(measurement + ": its " + axis + " " + std::to_string(along) + " is not the mask's " +
                  std::to_string(mask_along) + " + (C - 1) * |step| for C = " + std::to_string(*c) +
                  " bands and step " + std::to_string(r.d.step));
  if (m.per_band() && m.stack.shape[0] != *c)
    throw Failure(r.mask_name + ": the per-band mask has " + std::to_string(m.stack.shape[0]) + " bands, the cube " +
                  std::to_string(*c));
  return *c;
}

template <class T>
int run(Context &ctx, const Request &r, std::vector<Source> &&inputs, std::vector<Source> &&mask_sources) {
  const MaskData<T> m{ctx.stack<T>(std::move(mask_sources))};
  if (m.stack.shape.size() != 2 && m.stack.shape.size() != 3)
    throw Failure(r.mask_name + ": mask shape " + shape_string(m.stack.shape) +
                  " is neither (H, W) nor (C, H, W) (mask shape wrong)");
  const Mask<T> mask = m.mask();
  ctx.summary.set("mode", r.mode).set("step", r.d.step).set("axis", r.along_x() ? "x" : "y");

  if (r.mode == "phi") {
    const std::int64_t c = r.bands.value_or(m.per_band() ? m.stack.shape[0] : 0);
    if (c < 1) throw UsageError("hpipe cassi phi: give --bands C (or a per-band mask)");
    const Shape3 meas = cassi_measurement_shape({1, c, m.height(), m.width()}, r.d);
    band_count(r, m, meas[1], meas[2], "phi");  // checks a per-band mask against --bands
    std::vector<T> phi = ctx.allocate<T>({meas[1], meas[2]}, "phi");
    ctx.timed("compute", [&] { cassi_phi(mask, c, r.d, View<T, 2>(phi.data(), {meas[1], meas[2]}), ctx.options); });
    ctx.summary.set("bands", c);
    ctx.write_output(ctx.output_path(), {meas[1], meas[2]}, phi, sizeof(T) == 8 ? DType::f64 : DType::f32);
    return 0;
  }

  const DType compute_type = sizeof(T) == 8 ? DType::f64 : DType::f32;
  const std::string out = ctx.output_path();
  Stack<T> in = ctx.stack<T>(std::move(inputs));
  const std::string in_name = in.files.size() == 1 ? in.files[0] : ctx.positional[1];
  const Shape &s = in.shape;
  if (r.mode == "forward") {
    if (s.size() < 2 || s.size() > 4)
      throw Failure(in_name + ": shape " + shape_string(s) + " is not a band stack (C, H, W) or a batch (B, C, H, W)");
    const Shape4 cube = s.size() == 4 ? Shape4{s[0], s[1], s[2], s[3]}
                                      : Shape4{1, s.size() == 3 ? s[0] : 1, s[s.size() - 2], s.back()};
    if (cube[2] != m.height() || cube[3] != m.width())
      throw Failure(r.mask_name + ": mask size " + size_text(m.height(), m.width()) + " differs from the images' " +
                    size_text(cube[2], cube[3]) + " (mask shape wrong)");
    if (m.per_band() && m.stack.shape[0] != cube[1])
      throw Failure(r.mask_name + ": the per-band mask has " + std::to_string(m.stack.shape[0]) + " bands, " +
                    in_name + " has " + std::to_string(cube[1]));
    const Shape3 meas = cassi_measurement_shape(cube, r.d);
    std::vector<T> y = ctx.allocate<T>({meas[0], meas[1], meas[2]}, "the measurement");
    ctx.timed("compute", [&] {
      cassi_forward(View<const T, 4>(in.data.data(), cube), mask, r.d, View<T, 3>(y.data(), meas), ctx.options);
    });
    ctx.summary.set("bands", cube[1]);
    const Shape y_shape = s.size() == 4 ? Shape{meas[0], meas[1], meas[2]} : Shape{meas[1], meas[2]};
    ctx.write_output(out, y_shape, y, compute_type);
    return 0;
  }

  if (s.size() < 2 || s.size() > 3)
    throw Failure(in_name + ": shape " + shape_string(s) + " is not a measurement (H', W') or a batch (B, H', W')");
  const Shape3 meas = s.size() == 3 ? Shape3{s[0], s[1], s[2]} : Shape3{1, s[0], s[1]};
  const std::int64_t c = band_count(r, m, meas[1], meas[2], in_name);
  const Shape4 cube = cassi_cube_shape(meas, c, r.d);
  std::vector<T> x = ctx.allocate<T>({cube[0], cube[1], cube[2], cube[3]}, "the cube");
  const View<const T, 3> yv(in.data.data(), meas);
  const View<T, 4> xv(x.data(), cube);
  ctx.timed("compute", [&] {
    if (r.mode == "adjoint") cassi_adjoint(yv, mask, r.d, xv, ctx.options);
    if (r.mode == "pinv") cassi_pinv(yv, mask, r.d, xv, ctx.options);
    if (r.mode == "pinv-alpha") cassi_pinv_alpha(yv, mask, r.d, xv, ctx.options);
  });
  ctx.summary.set("bands", c);
  const Shape x_shape = s.size() == 3 ? Shape{cube[0], cube[1], cube[2], cube[3]} : Shape{cube[1], cube[2], cube[3]};
  ctx.write_output(out, x_shape, x, compute_type);
  return 0;
}

}  // namespace

int run_cassi(Context &ctx) {
  const std::vector<std::string> modes = {"forward", "adjoint", "pinv", "pinv-alpha", "phi"};
  if (ctx.positional.empty() || std::find(modes.begin(), modes.end(), ctx.positional[0]) == modes.end())
    throw UsageError("hpipe cassi: expected forward, adjoint, pinv, pinv-alpha or phi" +
                     (ctx.positional.empty() ? std::string() : ", got '" + ctx.positional[0] + "'"));
  Request r;
  r.mode = ctx.positional[0];
  r.mask_name = ctx.required("--mask");
  r.d.step = static_cast<int>(ctx.integer("--step", 2, -(1 << 24), 1 << 24));
  const std::string axis = ctx.value("--axis").value_or("x");
  if (axis != "x" && axis != "y") throw UsageError("--axis: expected x or y, got '" + axis + "'");
  r.d.axis = axis == "x" ? Axis::width : Axis::height;
  if (ctx.has("--bands")) r.bands = ctx.integer("--bands", 0, 1, 1 << 20);
  const std::vector<std::string> specs(ctx.positional.begin() + 1, ctx.positional.end());
  if (r.mode == "phi" && !specs.empty()) throw UsageError("hpipe cassi phi: takes no input stack, only --mask");
  if (r.mode != "phi" && specs.empty())
    throw UsageError("hpipe cassi " + r.mode + ": expected an input STACK (see hpipe cassi --help)");
  std::vector<Source> inputs;
  if (!specs.empty()) inputs = ctx.read_inputs(specs, r.mode == "forward" ? "bands" : "measurement");
  std::vector<Source> mask = ctx.read_inputs({r.mask_name}, "mask");
  return with_precision(any_float64(inputs) || any_float64(mask), [&](auto zero) {
    return run<decltype(zero)>(ctx, r, std::move(inputs), std::move(mask));
  });
}

}  // namespace hpipe::cli
