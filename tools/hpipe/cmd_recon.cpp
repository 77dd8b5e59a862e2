// hpipe recon gap-tv|admm-tv: iterative CASSI reconstruction (hpipe/recon.h), one line of progress
// per iteration, and with --truth the per-band PSNR and SSIM of the result and, for comparison,
// of the pseudo-inverse of the same measurement.
#include <cstdio>

#include "cassi_options.h"
#include "commands.h"
#include "file.h"
#include "hpipe/error.h"
#include "hpipe/recon.h"
#include "preview.h"

namespace hpipe::cli {

namespace {

using Shape3 = std::array<std::int64_t, 3>;
using Shape4 = std::array<std::int64_t, 4>;

std::string fixed(const char *format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The quality of each batch item of `x` against the truth, printed per band with its means.
template <class T>
std::vector<Json> report_quality(Context &ctx, const char *label, const hpipe::AlignedVector<T> &x,
                                 const Stack<T> &truth, const Shape4 &cube, bool per_band_lines) {
  std::vector<Json> items;
  const std::int64_t image = cube[1] * cube[2] * cube[3];
  for (std::int64_t b = 0; b < cube[0]; b++) {
    const Shape3 bands{cube[1], cube[2], cube[3]};
    const BandQuality q = band_quality(View<const T, 3>(x.data() + b * image, bands),
                                       View<const T, 3>(truth.data.data() + b * image, bands));
    const std::string item = cube[0] > 1 ? " item " + std::to_string(b) : "";
    if (per_band_lines)
      for (std::size_t c = 0; c < q.psnr.size(); c++)
        ctx.say(std::string(label) + item + " band " + std::to_string(c) + ": PSNR " + fixed("%.2f", q.psnr[c]) +
                " dB, SSIM " + fixed("%.4f", q.ssim[c]));
    ctx.say(std::string(label) + item + " mean: PSNR " + fixed("%.2f", q.mean_psnr) + " dB, SSIM " +
            fixed("%.4f", q.mean_ssim));
    items.push_back(
        Json().set("psnr", q.psnr).set("ssim", q.ssim).set("mean_psnr", q.mean_psnr).set("mean_ssim", q.mean_ssim));
  }
  return items;
}

template <class T>
int run(Context &ctx, ReconMethod method, const CassiArgs &r, const ReconParams &params, std::vector<Source> &&inputs,
        std::vector<Source> &&mask_sources, std::vector<Source> &&truth_sources, const std::vector<double> &truth_nm) {
  const std::string out = ctx.checked_output_path();
  MaskData<T> m = read_mask<T>(ctx, r, std::move(mask_sources));
  Stack<T> in = ctx.stack<T>(std::move(inputs));
  const std::string in_name = in.files.size() == 1 ? in.files[0] : ctx.positional[1];
  const Shape &s = in.shape;
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
  const Shape x_shape = s.size() == 3 ? Shape{cube[0], cube[1], cube[2], cube[3]} : Shape{cube[1], cube[2], cube[3]};
  std::optional<Stack<T>> truth;
  if (!truth_sources.empty()) {
    truth = ctx.stack<T>(std::move(truth_sources));
    if (truth->shape != x_shape)
      throw Failure(*ctx.value("--truth") + ": the truth has shape " + shape_string(truth->shape) +
                    ", the reconstruction " + shape_string(x_shape));
  }

  // --preview's wavelengths and files, checked before the work.
  const auto preview_dir = ctx.value("--preview");
  std::vector<double> nm;
  std::vector<std::string> picture_names = {"result.png"};
  if (truth) picture_names.insert(picture_names.end(), {"truth.png", "pinv.png", "comparison.png"});
  std::vector<std::string> targets;
  if (preview_dir) {
    nm = band_wavelengths(ctx.value("--wavelengths"), truth_nm, c, in_name, true);
    for (const std::string &name : picture_names) targets.push_back(*preview_dir + "/" + name);
    OutputSet::check(targets, ctx.input_files(), ctx.write.force);
  }

  hpipe::AlignedVector<T> x = ctx.allocate<T>(x_shape, "the cube");
  const View<const T, 3> yv(in.data.data(), meas);
  std::vector<double> residuals;
  const IterationCallback progress = [&](const IterationInfo &it) {
    residuals.push_back(it.residual);
    ctx.say("iteration " + std::to_string(it.iteration) + "/" + std::to_string(it.iterations) +
            ": ||y - A x|| = " + fixed("%.6g", it.residual));
    std::fflush(stdout);
  };
  ctx.timed("compute", [&] {
    try {
      if (method == ReconMethod::gap_tv)
        gap_tv(yv, mask, params, View<T, 4>(x.data(), cube), progress, ctx.options);
      else
        admm_tv(yv, mask, params, View<T, 4>(x.data(), cube), progress, ctx.options);
    } catch (const Error &e) {
      // The library's bounds of a parameter that depend on the precision (--lambda 1e308 is past
      // float32's): a usage error naming the option that gave it.
      const std::string what = e.what(), op = std::string("hpipe::") + to_string(method) + ": ";
      for (const auto &[parameter, option] : {std::pair{"lambda: ", "--lambda: "},
                                              {"gamma: ", "--gamma: "},
                                              {"tv.weight: ", "--tv-weight: "},
                                              {"tv.iterations: ", "--tv-iters: "}})
        if (const std::string named = op + parameter; what.rfind(named, 0) == 0)
          throw UsageError(option + what.substr(named.size()));
      throw;
    }
  });
  ctx.summary.set("method", to_string(method)).set("bands", c).set("iterations", params.iterations);
  ctx.summary.set("residuals", residuals);
  hpipe::AlignedVector<T> pinv;
  if (truth) {
    ctx.timed("quality", [&] {
      ctx.summary.set("quality", report_quality(ctx, to_string(method), x, *truth, cube, true));
      pinv = ctx.allocate<T>(x_shape, "the pseudo-inverse");
      cassi_pinv(yv, mask, r.d, View<T, 4>(pinv.data(), cube), ctx.options);
      ctx.summary.set("pinv_quality", report_quality(ctx, "pinv", pinv, *truth, cube, false));
    });
  }
  // --preview DIR: colour pictures of (the first item of) the result, and with --truth of the
  // truth and the pseudo-inverse and the three side by side with their PSNR/SSIM; all at gain 1
  // so that they compare. Written beside the result and committed with it.
  if (preview_dir) {
    const Shape3 bands{c, cube[2], cube[3]};
    auto colour = [&](const T *data) { return render_colour(data, c, cube[2], cube[3], nm, 1.0); };
    auto quality = [&](const T *data) {
      const BandQuality q = band_quality(View<const T, 3>(data, bands), View<const T, 3>(truth->data.data(), bands));
      return fixed("%.2f DB", q.mean_psnr) + fixed(" SSIM %.3f", q.mean_ssim);
    };
    std::vector<Picture> pictures = {colour(x.data())};  // in the order of picture_names
    if (truth) {
      pictures.push_back(colour(truth->data.data()));
      pictures.push_back(colour(pinv.data()));
      pictures.push_back(side_by_side({{pictures[1], {"SCENE"}},
                                       {pictures[2], {"PSEUDO-INVERSE", quality(pinv.data())}},
                                       {pictures[0], {ctx.positional[0], quality(x.data())}}}));
    }
    const std::size_t first = ctx.outputs().add(targets, ctx.input_files());  // committed with the result
    for (std::size_t i = 0; i < pictures.size(); i++) {
      write_picture(ctx.outputs().destination(first + i), pictures[i]);
      ctx.note("wrote " + targets[i]);
    }
    ctx.summary.set("previews", targets);
  }
  ctx.write_output(out, x_shape, x, sizeof(T) == 8 ? DType::f64 : DType::f32);
  return 0;
}

}  // namespace

ReconMethod checked_recon_method(const Context &ctx, const std::string &name) {
  ReconMethod method;
  try {
    method = parse_recon_method(name);
  } catch (const Error &) {
    throw UsageError("hpipe recon: expected gap-tv or admm-tv, got '" + name + "'");
  }
  // Each method's own option, which the other would ignore.
  const std::pair<const char *, const char *> owned[] = {{"--gamma", "admm-tv"}, {"--no-accelerate", "gap-tv"}};
  for (const auto &[option, owner] : owned)
    if (ctx.has(option) && parse_recon_method(owner) != method)
      throw UsageError("hpipe recon " + name + ": " + option + " applies to " + owner + " only");
  return method;
}

int run_recon(Context &ctx) {
  if (ctx.positional.empty()) throw UsageError("hpipe recon: expected gap-tv or admm-tv (see hpipe recon --help)");
  const ReconMethod method = checked_recon_method(ctx, ctx.positional[0]);
  const std::string command = "hpipe recon " + ctx.positional[0];
  if (ctx.positional.size() < 2) throw UsageError(command + ": expected a measurement STACK (see hpipe recon --help)");
  const CassiArgs r = parse_cassi_args(ctx, command);
  ReconParams p;
  p.dispersion = r.d;
  p.iterations = static_cast<int>(ctx.integer("--iters", p.iterations, 0, 1 << 20));
  p.lambda = ctx.real("--lambda", p.lambda, 0, true);
  p.gamma = ctx.real("--gamma", p.gamma, 0);
  p.accelerate = !ctx.has("--no-accelerate");
  p.tv.weight = ctx.real("--tv-weight", p.tv.weight, 0, true);
  p.tv.iterations = static_cast<int>(ctx.integer("--tv-iters", p.tv.iterations, 1, 1 << 20));
  p.tv.vectorial = ctx.has("--vectorial");
  const std::vector<std::string> specs(ctx.positional.begin() + 1, ctx.positional.end());
  std::vector<Source> inputs = ctx.read_inputs(specs, "measurement");
  std::vector<Source> mask = ctx.read_inputs({r.mask_name}, "mask");
  std::vector<Source> truth;
  if (const auto t = ctx.value("--truth")) truth = ctx.read_inputs({*t}, "truth");
  const std::vector<double> truth_nm = truth.size() == 1 ? truth[0].wavelengths : std::vector<double>{};
  return ctx.with_precision(any_float64(inputs) || any_float64(mask), [&](auto zero) {
    return run<decltype(zero)>(ctx, method, r, p, std::move(inputs), std::move(mask), std::move(truth), truth_nm);
  });
}

}  // namespace hpipe::cli
