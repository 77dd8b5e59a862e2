// PNG through libpng: 8- and 16-bit grayscale (lower depths widen to 8 bits), RGB and palette
// images as 3 bands; alpha is dropped. Strict: a wrong signature, a truncated or corrupt stream,
// zero or huge declared dimensions are a Failure naming the file, before any large allocation.
#pragma once

#include <optional>
#include <string>

#include "array.h"

namespace hpipe::cli {

// The values a PNG's integers stand for: 0 -> lo, the largest integer -> hi. hpipe stores it in
// a tEXt chunk ("hpipe-scale") when it writes a scaled PNG, so reading restores the units.
struct ValueRange {
  double lo = 0, hi = 1;
};

struct PngImage {
  RawArray array;  // uint8 or uint16: (H, W) for grayscale, (3, H, W) for colour
  std::optional<ValueRange> range;
};

bool has_png_magic(const std::string &path);
PngImage read_png(const std::string &path);
// `image` is (H, W) of uint8 or uint16.
void write_png(const std::string &path, const RawArray &image, const std::optional<ValueRange> &range);

}  // namespace hpipe::cli
