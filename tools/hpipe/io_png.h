// PNG through libpng: 8- and 16-bit grayscale (lower depths widen to 8 bits), RGB and palette
// images as 3 bands; alpha is dropped. Strict: a wrong signature, a truncated or corrupt stream,
// zero or huge declared dimensions, a chunk longer than the rest of the file, a non-finite
// hpipe-scale range are a Failure naming the file, before any large allocation. Ancillary chunks
// hpipe has no use for (compressed text, ICC profiles, palettes of suggestions, Exif...) are
// skipped unread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "array.h"
#include "file.h"

namespace hpipe::cli {

// The most pixels per side hpipe reads or writes (libpng's own default for writing is 10^6).
constexpr std::int64_t kPngMaxSide = 1 << 20;

// The values a PNG's integers stand for: 0 -> lo, the largest integer -> hi. hpipe stores it in
// a tEXt chunk ("hpipe-scale") when it writes a scaled PNG, so reading restores the units.
struct ValueRange {
  double lo = 0, hi = 1;
};

struct PngImage {
  RawArray array;  // uint8 or uint16: (H, W) for grayscale, (3, H, W) for colour
  std::optional<ValueRange> range;
};

// Whether a file's first bytes are the PNG signature.
bool is_png(const unsigned char *head, std::size_t size);
PngImage read_png(const std::string &path);
PngImage read_png(InputFile &in);
// `image` is (H, W) of uint8 or uint16, each side at most kPngMaxSide.
void write_png(const std::string &path, const RawArray &image, const std::optional<ValueRange> &range);
void write_png(OutputFile &out, const RawArray &image, const std::optional<ValueRange> &range);  // closes `out`
// The PNG file's bytes, made in memory (no file touched: threads may encode planes side by side);
// `path` names the file in errors.
std::vector<unsigned char> encode_png(const std::string &path, const RawArray &image,
                                      const std::optional<ValueRange> &range);

}  // namespace hpipe::cli
