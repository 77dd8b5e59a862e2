// Pictures of spectral cubes: an sRGB rendering through the CIE 1931 2-degree colour-matching
// functions, a labelled montage of the bands, and labelled side-by-side panels; written as 8-bit
// RGB PNGs. Used by `hpipe preview` and `hpipe recon --preview`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "file.h"

namespace hpipe::cli {

// The 28 band centres (nm) of the KAIST/CAVE simulation data as TSA-Net and MST use them
// (453.3 ... 648.1): the default for a 28-band cube without wavelengths of its own.
const std::vector<double> &kaist_wavelengths();

// The wavelengths of a cube's `bands`: from `option` ("450,460,..." or "START:STOP", evenly spaced
// with both ends), else `from_file`, else the KAIST 28 when bands == 28. UsageError otherwise,
// naming `cube`, and, for a `colour` picture, when no band is within 380-780 nm (it would be
// black: micrometres, or a typo).
std::vector<double> band_wavelengths(const std::optional<std::string> &option, const std::vector<double> &from_file,
                                     std::int64_t bands, const std::string &cube, bool colour);

// An 8-bit sRGB picture, row-major, 3 bytes a pixel.
struct Picture {
  std::int64_t height = 0, width = 0;
  std::vector<std::uint8_t> rgb;
  Picture() = default;
  Picture(std::int64_t h, std::int64_t w, std::uint8_t grey) : height(h), width(w), rgb(std::size_t(h * w * 3), grey) {}
};

// Linear values times `gain` (1: [0, 1] is the full range); `auto` picks the gain that puts the
// 99th percentile of the luminance (or of the values, for a montage) at 1.
std::optional<double> parse_gain(const std::string &text);  // nullopt: auto

// The colour of a (C, H, W) cube of linear radiance or reflectance with band centres `nm`:
// X, Y, Z = sum over bands of value x CMF(nm) x band width, balanced so that a flat spectrum
// of 1 is the D65 white (sRGB 1, 1, 1), then linear sRGB (IEC 61966-2-1), clipped, encoded.
template <class T>
Picture render_colour(const T *cube, std::int64_t bands, std::int64_t height, std::int64_t width,
                      const std::vector<double> &nm, std::optional<double> gain);
// Every band in grey (sRGB-encoded), in a grid, each labelled with its wavelength.
template <class T>
Picture render_montage(const T *cube, std::int64_t bands, std::int64_t height, std::int64_t width,
                       const std::vector<double> &nm, std::optional<double> gain);

// Panels side by side, each with its lines of text below.
struct Panel {
  Picture picture;
  std::vector<std::string> lines;
};
Picture side_by_side(const std::vector<Panel> &panels);

// The CIE 1931 2-degree colour-matching functions at `nm` (see preview.cpp for the source).
void cie1931(double nm, double &x, double &y, double &z);

void write_picture(const Destination &file, const Picture &picture);

}  // namespace hpipe::cli
