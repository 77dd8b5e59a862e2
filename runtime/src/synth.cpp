#include "hpipe/synth.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "fail.h"

namespace hpipe {

namespace {

// splitmix64: tiny, fast and identical everywhere (std:: distributions are not).
std::uint64_t next(std::uint64_t &state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void check_extent(const char *op, const char *name, std::int64_t v) {
  if (v < 1 || v > (1 << 20)) detail::fail(op, name, "expected 1 to 2^20, got " + std::to_string(v));
}

struct Shape {
  double cx, cy, rx, ry;             // centre and half-sizes, in units of the image size
  int kind;                          // 0 disc, 1 rectangle, 2 ring
  double base, peak, centre, width;  // spectrum: base + peak * exp(-((l - centre) / width)^2 / 2)
  bool contains(double u, double v) const {
    const double dx = (u - cx) / rx, dy = (v - cy) / ry;
    switch (kind) {
      case 0: return dx * dx + dy * dy <= 1;
      case 1: return std::abs(dx) <= 1 && std::abs(dy) <= 1;
      default: {
        const double r2 = dx * dx + dy * dy;
        return r2 <= 1 && r2 >= 0.45;
      }
    }
  }
  double spectrum(double l) const {
    const double t = (l - centre) / width;
    return base + peak * std::exp(-0.5 * t * t);
  }
};

const Shape kShapes[] = {
    {0.28, 0.30, 0.16, 0.16, 0, 0.10, 0.80, 0.20, 0.12}, {0.70, 0.28, 0.18, 0.12, 1, 0.20, 0.70, 0.55, 0.15},
    {0.50, 0.68, 0.22, 0.22, 2, 0.05, 0.90, 0.80, 0.10}, {0.22, 0.76, 0.10, 0.14, 1, 0.50, 0.40, 0.40, 0.30},
    {0.78, 0.74, 0.09, 0.09, 0, 0.30, 0.65, 0.95, 0.08},
};

}  // namespace

Array<float, 3> synth_scene(std::int64_t bands, std::int64_t height, std::int64_t width) {
  check_extent("synth_scene", "bands", bands);
  check_extent("synth_scene", "height", height);
  check_extent("synth_scene", "width", width);
  Array<float, 3> scene({bands, height, width});
  for (std::int64_t c = 0; c < bands; c++) {
    const double l = bands == 1 ? 0.5 : double(c) / double(bands - 1);  // wavelength in [0, 1]
    for (std::int64_t h = 0; h < height; h++) {
      const double v = (h + 0.5) / double(height);
      for (std::int64_t w = 0; w < width; w++) {
        const double u = (w + 0.5) / double(width);
        // Background: a gentle spatial gradient under a slowly rising spectrum.
        double value = 0.08 + 0.10 * u + 0.06 * v + 0.08 * l;
        for (const Shape &s : kShapes)
          if (s.contains(u, v)) value = s.spectrum(l);  // later shapes lie on top
        scene(c, h, w) = static_cast<float>(std::clamp(value, 0.0, 1.0));
      }
    }
  }
  return scene;
}

Array<float, 2> synth_mask(std::int64_t height, std::int64_t width, std::uint64_t seed) {
  check_extent("synth_mask", "height", height);
  check_extent("synth_mask", "width", width);
  Array<float, 2> mask({height, width});
  std::uint64_t state = seed;
  for (std::int64_t i = 0; i < mask.size(); i++) {
    // (0, 1]: 24 random bits, shifted by one step so 0 never appears.
    const double u = double((next(state) >> 40) + 1) / double(1ull << 24);
    mask.data()[i] = static_cast<float>(u);
  }
  return mask;
}

}  // namespace hpipe
