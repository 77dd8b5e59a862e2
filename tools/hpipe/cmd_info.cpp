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
    std::int64_t nonfinite = 0;
    for (std::int64_t i = 0; i < s.array.size(); i++) {
      const double v = s.array.at(i);
      if (!std::isfinite(v)) {
        nonfinite++;
        continue;
      }
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
    const Decoder decode(s, ctx.read);
    const bool png = s.png;
    Json j;
    j.set("path", s.path).set("format", png ? "png" : "npy").set("shape", s.array.shape).set("dtype", name(s.array.dtype));
    j.set("stored_min", lo).set("stored_max", hi).set("min", decode(lo)).set("max", decode(hi));
    j.set("nonfinite", nonfinite);
    files.push_back(j);
    char range[160];
    std::snprintf(range, sizeof range, "values [%.6g, %.6g]", decode(lo), decode(hi));
    std::string line = s.path + ": " + (png ? "PNG" : "NPY") + " " + shape_string(s.array.shape) + " " +
                       name(s.array.dtype) + ", " + range;
    if (decode.factor != 1 || decode.offset != 0) {
      std::snprintf(range, sizeof range, " (stored [%.6g, %.6g])", lo, hi);
      line += range;
    }
    if (nonfinite) line += ", " + std::to_string(nonfinite) + " NaN/inf";
    if (s.array.size() == 0) line += ", empty";
    ctx.say(line);
  }
  ctx.summary.set("files", files);
  return 0;
}

}  // namespace hpipe::cli
