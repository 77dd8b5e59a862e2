// hpipe cassi forward|adjoint|pinv|pinv-alpha|phi: the CASSI operators of hpipe/cassi.h.
#include <algorithm>
#include <array>

#include "cassi_options.h"
#include "commands.h"

namespace hpipe::cli {

namespace {

using Shape3 = std::array<std::int64_t, 3>;
using Shape4 = std::array<std::int64_t, 4>;

template <class T>
int run(Context &ctx, const std::string &mode, const CassiArgs &r, std::vector<Source> &&inputs,
        std::vector<Source> &&mask_sources) {
  MaskData<T> m = read_mask<T>(ctx, r, std::move(mask_sources));
  ctx.summary.set("mode", mode).set("step", r.d.step).set("axis", r.along_x() ? "x" : "y");

  if (mode == "phi") {
    const std::string out = ctx.checked_output_path();
    recover_preshifted_mask(ctx, r, m, 0);  // no measurement: known by its zeros
    const std::int64_t c = r.bands.value_or(m.per_band() ? m.stack.shape[0] : 0);
    if (c < 1) throw UsageError("hpipe cassi phi: give --bands C (or a per-band mask)");
    const Shape3 meas = cassi_measurement_shape({1, c, m.height(), m.width()}, r.d);
    band_count(r, m, meas[1], meas[2], "phi");  // checks a per-band mask against --bands
    const Mask<T> mask = m.mask();
    hpipe::AlignedVector<T> phi = ctx.allocate<T>({meas[1], meas[2]}, "phi");
    ctx.timed("compute", [&] { cassi_phi(mask, c, r.d, View<T, 2>(phi.data(), {meas[1], meas[2]}), ctx.options); });
    ctx.summary.set("bands", c);
    ctx.write_output(out, {meas[1], meas[2]}, phi, sizeof(T) == 8 ? DType::f64 : DType::f32);
    return 0;
  }

  const DType compute_type = sizeof(T) == 8 ? DType::f64 : DType::f32;
  const std::string out = ctx.checked_output_path();
  Stack<T> in = ctx.stack<T>(std::move(inputs));
  const std::string in_name = in.files.size() == 1 ? in.files[0] : ctx.positional[1];
  const Shape &s = in.shape;
  if (mode == "forward") {
    if (s.size() < 2 || s.size() > 4)
      throw Failure(in_name + ": shape " + shape_string(s) + " is not a band stack (C, H, W) or a batch (B, C, H, W)");
    const Shape4 cube =
        s.size() == 4 ? Shape4{s[0], s[1], s[2], s[3]} : Shape4{1, s.size() == 3 ? s[0] : 1, s[s.size() - 2], s.back()};
    if (r.bands && *r.bands != cube[1])
      throw UsageError("--bands " + std::to_string(*r.bands) + ": " + in_name + " has " + std::to_string(cube[1]) +
                       " bands (shape " + shape_string(s) + "); leave --bands out, the cube says it");
    recover_preshifted_mask(ctx, r, m, cassi_measurement_shape(cube, r.d)[r.along_x() ? 2 : 1]);
    const Mask<T> mask = m.mask();
    if (cube[2] != m.height() || cube[3] != m.width())
      throw Failure(r.mask_name + ": mask size " + size_text(m.height(), m.width()) + " differs from the images' " +
                    size_text(cube[2], cube[3]) + " (mask shape wrong)");
    if (m.per_band() && m.stack.shape[0] != cube[1])
      throw Failure(r.mask_name + ": the per-band mask has " + std::to_string(m.stack.shape[0]) + " bands, " + in_name +
                    " has " + std::to_string(cube[1]));
    const Shape3 meas = cassi_measurement_shape(cube, r.d);
    hpipe::AlignedVector<T> y = ctx.allocate<T>({meas[0], meas[1], meas[2]}, "the measurement");
    ctx.timed("compute", [&] {
      cassi_forward(View<const T, 4>(in.data.data(), cube), mask, r.d, View<T, 3>(y.data(), meas), ctx.options);
      const auto factor = static_cast<T>(measurement_factor(r, cube[1]));
      if (factor != 1)
        for (T &v : y) v *= factor;
    });
    ctx.summary.set("bands", cube[1]);
    const Shape y_shape = s.size() == 4 ? Shape{meas[0], meas[1], meas[2]} : Shape{meas[1], meas[2]};
    ctx.write_output(out, y_shape, y, compute_type);
    return 0;
  }

  if (s.size() < 2 || s.size() > 3)
    throw Failure(in_name + ": shape " + shape_string(s) + " is not a measurement (H', W') or a batch (B, H', W')");
  const Shape3 meas = s.size() == 3 ? Shape3{s[0], s[1], s[2]} : Shape3{1, s[0], s[1]};
  recover_preshifted_mask(ctx, r, m, r.along_x() ? meas[2] : meas[1]);
  const Mask<T> mask = m.mask();
  const std::int64_t c = band_count(r, m, meas[1], meas[2], in_name);
  const auto factor = static_cast<T>(1 / measurement_factor(r, c));
  if (factor != 1)
    for (T &v : in.data) v *= factor;
  const Shape4 cube = cassi_cube_shape(meas, c, r.d);
  hpipe::AlignedVector<T> x = ctx.allocate<T>({cube[0], cube[1], cube[2], cube[3]}, "the cube");
  const View<const T, 3> yv(in.data.data(), meas);
  const View<T, 4> xv(x.data(), cube);
  ctx.timed("compute", [&] {
    if (mode == "adjoint") cassi_adjoint(yv, mask, r.d, xv, ctx.options);
    if (mode == "pinv") cassi_pinv(yv, mask, r.d, xv, ctx.options);
    if (mode == "pinv-alpha") cassi_pinv_alpha(yv, mask, r.d, xv, ctx.options);
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
  const std::string mode = ctx.positional[0];
  const CassiArgs r = parse_cassi_args(ctx, "hpipe cassi " + mode);
  const std::vector<std::string> specs(ctx.positional.begin() + 1, ctx.positional.end());
  if (mode == "phi" && !specs.empty()) throw UsageError("hpipe cassi phi: takes no input stack, only --mask");
  if (mode != "phi" && specs.empty())
    throw UsageError("hpipe cassi " + mode + ": expected an input STACK (see hpipe cassi --help)");
  std::vector<Source> inputs;
  if (!specs.empty()) inputs = ctx.read_inputs(specs, mode == "forward" ? "bands" : "measurement");
  std::vector<Source> mask = ctx.read_inputs({r.mask_name}, "mask");
  return ctx.with_precision(any_float64(inputs) || any_float64(mask), [&](auto zero) {
    return run<decltype(zero)>(ctx, mode, r, std::move(inputs), std::move(mask));
  });
}

}  // namespace hpipe::cli
