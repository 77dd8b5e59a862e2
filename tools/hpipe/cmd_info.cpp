// hpipe info: format, shape, type and value range of each file.
#include <algorithm>
#include <cmath>
#include <limits>

#include "commands.h"

namespace hpipe::cli {

int run_info(Context &ctx) {
  if (ctx.positional.empty()) throw UsageError("hpipe info: expected one or more files (see hpipe info --help)");
  const std::vector<Source> sources = ctx.read_inputs(ctx.positional, "input");
  std::vector<Json> files;
  for (const Source &s : sources) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    std::int64_t nonfinite = 0, nans = 0;
    for (std::int64_t i = 0; i < s.array.size(); i++) {
      const double v = s.array.at(i);
      if (!std::isfinite(v)) {
        nonfinite++, nans += std::isnan(v);
        continue;
      }
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
    const std::int64_t elements = s.array.size();
    const bool any_finite = nonfinite < elements;
    const Decoder decode(s, ctx.read);
    Json j;
    j.set("path", s.path)
        .set("format", lower_case(name(s.format)))
        .set("shape", s.array.shape)
        .set("dtype", name(s.array.dtype));
    j.set("stored_shape", s.stored_shape);
    if (s.layout) j.set("layout", name(*s.layout));
    if (!s.detail.empty()) j.set("detail", s.detail);
    if (!s.wavelengths.empty()) j.set("wavelengths", s.wavelengths);
    // No finite value (empty, or all NaN/inf): min and max are null, not the +-inf they start at.
    const double none = std::numeric_limits<double>::quiet_NaN();  // null in JSON
    j.set("stored_min", any_finite ? lo : none).set("stored_max", any_finite ? hi : none);
    j.set("min", any_finite ? decode(lo) : none).set("max", any_finite ? decode(hi) : none);
    j.set("nonfinite", nonfinite);
    files.push_back(j);
    char range[160];
    if (elements == 0)
      std::snprintf(range, sizeof range, "no values (empty)");
    else if (!any_finite)
      std::snprintf(range, sizeof range, "all %lld values %s", static_cast<long long>(elements),
                    nans == elements ? "NaN" : "NaN or inf");
    else
      std::snprintf(range, sizeof range, "values [%.6g, %.6g]", decode(lo), decode(hi));
    // "scene.mat:img: MAT v5 'img' (256, 256, 28) hwc -> (28, 256, 256) float64, values [0, 1]"
    std::string line =
        s.path + ": " + name(s.format) + (s.detail.empty() ? "" : " " + s.detail) + " " + shape_string(s.stored_shape);
    if (s.layout) line += std::string(" ") + name(*s.layout);
    if (s.stored_shape != s.array.shape) line += " -> " + shape_string(s.array.shape);
    line += std::string(" ") + name(s.array.dtype) + ", " + range;
    if (any_finite && (decode.factor != 1 || decode.offset != 0)) {
      std::snprintf(range, sizeof range, " (stored [%.6g, %.6g])", lo, hi);
      line += range;
    }
    if (any_finite && nonfinite) line += ", " + std::to_string(nonfinite) + " NaN/inf";
    if (!s.wavelengths.empty()) {
      std::snprintf(range, sizeof range, ", wavelengths %.6g..%.6g nm (%zu)", s.wavelengths.front(),
                    s.wavelengths.back(), s.wavelengths.size());
      line += range;
    }
    ctx.say(line);
  }
  ctx.summary.set("files", files);
  return 0;
}

}  // namespace hpipe::cli
