// What `hpipe cassi` and `hpipe recon` share: --mask, --step, --axis, --bands, the mask as a
// stack, and the band count of the cube behind a measurement.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

#include "cli.h"
#include "hpipe/cassi.h"

namespace hpipe::cli {

struct CassiArgs {
  std::string command;  // "hpipe cassi pinv", for messages
  std::string mask_name;
  Dispersion d;
  std::optional<std::int64_t> bands;
  bool along_x() const { return d.axis == Axis::width; }
};

// --mask (required), --step, --axis x|y, --bands; `command` names the caller in messages.
inline CassiArgs parse_cassi_args(const Context &ctx, std::string command) {
  CassiArgs r;
  r.command = std::move(command);
  r.mask_name = ctx.required("--mask");
  r.d.step = static_cast<int>(ctx.integer("--step", 2, -(1 << 24), 1 << 24));
  const std::string axis = ctx.value("--axis").value_or("x");
  if (axis != "x" && axis != "y") throw UsageError("--axis: expected x or y, got '" + axis + "'");
  r.d.axis = axis == "x" ? Axis::width : Axis::height;
  if (ctx.has("--bands")) r.bands = ctx.integer("--bands", 0, 1, 1 << 20);
  return r;
}

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

// The mask read as (H, W) or (C, H, W); a Failure for other ranks.
template <class T>
MaskData<T> read_mask(Context &ctx, const CassiArgs &r, std::vector<Source> &&sources) {
  MaskData<T> m{ctx.stack<T>(std::move(sources))};
  if (m.stack.shape.size() != 2 && m.stack.shape.size() != 3)
    throw Failure(r.mask_name + ": mask shape " + shape_string(m.stack.shape) +
                  " is neither (H, W) nor (C, H, W) (mask shape wrong)");
  return m;
}

inline std::string size_text(std::int64_t h, std::int64_t w) { return std::to_string(h) + " x " + std::to_string(w); }

// The band count of the cube behind a measurement of H' x W' (or of phi when h, w are the mask's):
// --bands, else a per-band mask's, else what the widths imply.
template <class T>
std::int64_t band_count(const CassiArgs &r, const MaskData<T> &m, std::int64_t hm, std::int64_t wm,
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
    throw UsageError(r.command + ": give --bands C (the measurement " + measurement +
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

}  // namespace hpipe::cli
