// What `hpipe cassi` and `hpipe recon` share: --mask, --step, --axis, --bands, --tsa-norm, the
// mask as a stack (also a pre-shifted one), and the band count of the cube behind a measurement.
#pragma once

#include <algorithm>
#include <array>
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
  // The measurement is y / C * 2, as the TSA-Net/MST family of code normalises it (their
  // gen_meas_torch: meas / nC * 2): forward writes that, the inverses undo it first.
  bool tsa_norm = false;
  bool along_x() const { return d.axis == Axis::width; }
};

// The factor from y to the measurement as stored: 2 / C with --tsa-norm, else 1.
inline double measurement_factor(const CassiArgs &r, std::int64_t bands) {
  return r.tsa_norm ? 2.0 / double(bands) : 1.0;
}

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
  r.tsa_norm = ctx.has("--tsa-norm");
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

// A per-band mask laid out as the published CASSI code's mask_3d_shift, (C, H, W + (C - 1)|S|)
// (stored (H, W', C) in their .mat files): band c's mask already displaced by o_c, zero elsewhere.
// hpipe's masks are unshifted, and shift_c(m_c x_c) = shift_c(m_c) shift_c(x_c): band c's window
// of the pre-shifted mask is m_c exactly, so the mask is cropped to those windows and the
// operators are the same. Recognised when a per-band mask spans `dispersed`, the measurement's
// extent along the dispersion (not the cube's); a Failure when anything lies outside a window
// (then it is not a pre-shifted mask for this step). Without a measurement (`dispersed` 0: phi),
// a per-band mask that is zero outside every band's window is taken as pre-shifted, any other
// as unshifted.
template <class T>
void recover_preshifted_mask(Context &ctx, const CassiArgs &r, MaskData<T> &m, std::int64_t dispersed) {
  const std::int64_t s = std::abs(static_cast<std::int64_t>(r.d.step));
  if (!m.per_band() || s == 0 || m.stack.shape[0] < 2) return;
  const std::int64_t c = m.stack.shape[0], h = m.height(), w = m.width();
  const std::int64_t along = r.along_x() ? w : h, spread = (c - 1) * s;
  if ((dispersed != 0 && along != dispersed) || along <= spread) return;
  const std::int64_t h2 = r.along_x() ? h : h - spread, w2 = r.along_x() ? w - spread : w;
  const std::int64_t lowest = std::min<std::int64_t>(0, (c - 1) * r.d.step);
  // Each element's band, row, column and position u within its band's window (in it: 0 <= u < along - spread).
  const auto for_each = [&](const auto &f) {
    for (std::int64_t b = 0; b < c; b++)
      for (std::int64_t y = 0; y < h; y++)
        for (std::int64_t x = 0; x < w; x++)
          f(b, y, x, (r.along_x() ? x : y) - (b * r.d.step - lowest),
            m.stack.data[static_cast<std::size_t>((b * h + y) * w + x)]);
  };
  std::optional<std::array<std::int64_t, 3>> outside;
  for_each([&](std::int64_t b, std::int64_t y, std::int64_t x, std::int64_t u, T v) {
    if (!outside && (u < 0 || u >= along - spread) && v != 0) outside = {b, y, x};
  });
  if (outside && dispersed == 0) return;
  if (outside)
    throw Failure(r.mask_name + ": the per-band mask spans the measurement (" + std::to_string(h) + " x " +
                  std::to_string(w) + ") as a pre-shifted mask (mask_3d_shift) would, but band " +
                  std::to_string((*outside)[0]) + " is non-zero outside its window for step " +
                  std::to_string(r.d.step) + " (at " + std::to_string((*outside)[1]) + ", " +
                  std::to_string((*outside)[2]) + ")");
  hpipe::AlignedVector<T> cropped(static_cast<std::size_t>(c * h2 * w2));
  for_each([&](std::int64_t b, std::int64_t y, std::int64_t x, std::int64_t u, T v) {
    if (u < 0 || u >= along - spread) return;
    const std::int64_t yy = r.along_x() ? y : u, xx = r.along_x() ? u : x;
    cropped[static_cast<std::size_t>((b * h2 + yy) * w2 + xx)] = v;
  });
  ctx.note(r.mask_name + ": a pre-shifted mask (mask_3d_shift layout): using each band's window, (" +
           std::to_string(c) + ", " + std::to_string(h2) + ", " + std::to_string(w2) + ")");
  ctx.summary.set("mask_preshifted", true);
  m.stack.shape = {c, h2, w2};
  m.stack.data = std::move(cropped);
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
    throw UsageError(r.command + ": give --bands C (the measurement " + measurement + " does not tell it with step " +
                     std::to_string(r.d.step) + ")");
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
