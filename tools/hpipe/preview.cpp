#include "preview.h"

#include <png.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "cli.h"
#include "errors.h"
#include "file.h"

namespace hpipe::cli {

namespace {

// A 5 x 7 bitmap font: digits, upper-case letters (lower case is drawn upper case) and a few
// signs; each glyph is 7 rows of 5 pixels, '#' set.
struct Glyph {
  char c;
  const char *rows;
};
const Glyph kFont[] = {
    {'0', ".###.#...##..###.#.###..##...#.###."}, {'1', "..#...##....#....#....#....#...###."},
    {'2', ".###.#...#....#...#...#...#...#####"}, {'3', "#####...#...#.....#.....##...#.###."},
    {'4', "...#...##..#.#.#..#.#####...#....#."}, {'5', "######....####.....#....##...#.###."},
    {'6', "..##..#...#....####.#...##...#.###."}, {'7', "#####....#...#...#...#....#....#..."},
    {'8', ".###.#...##...#.###.#...##...#.###."}, {'9', ".###.#...##...#.####....#...#..##.."},
    {'.', "..........................##...##.."}, {'-', "...............#####..............."},
    {'/', ".........#...#...#...#...#........."}, {':', "......##...##........##...##......."},
    {',', ".....................##....#...#..."}, {'(', "...#...#...#....#....#.....#.....#."},
    {')', ".#.....#.....#....#....#...#...#..."}, {'A', ".###.#...##...#######...##...##...#"},
    {'B', "####.#...##...#####.#...##...#####."}, {'C', ".###.#...##....#....#....#...#.###."},
    {'D', "####.#...##...##...##...##...#####."}, {'E', "######....#....####.#....#....#####"},
    {'F', "######....#....####.#....#....#...."}, {'G', ".###.#...##....#.####...##...#.####"},
    {'H', "#...##...##...#######...##...##...#"}, {'I', ".###...#....#....#....#....#...###."},
    {'J', "..###...#....#....#....#.#..#..##.."}, {'K', "#...##..#.#.#..##...#.#..#..#.#...#"},
    {'L', "#....#....#....#....#....#....#####"}, {'M', "#...###.###.#.##.#.##...##...##...#"},
    {'N', "#...##...###..##.#.##..###...##...#"}, {'O', ".###.#...##...##...##...##...#.###."},
    {'P', "####.#...##...#####.#....#....#...."}, {'Q', ".###.#...##...##...##.#.##..#..##.#"},
    {'R', "####.#...##...#####.#.#..#..#.#...#"}, {'S', ".#####....#.....###.....#....#####."},
    {'T', "#####..#....#....#....#....#....#.."}, {'U', "#...##...##...##...##...##...#.###."},
    {'V', "#...##...##...##...##...#.#.#...#.."}, {'W', "#...##...##...##.#.##.#.##.#.#.#.#."},
    {'X', "#...##...#.#.#...#...#.#.#...##...#"}, {'Y', "#...##...#.#.#...#....#....#....#.."},
    {'Z', "#####....#...#...#...#...#....#####"},
};
constexpr int kGlyphW = 5, kGlyphH = 7, kAdvance = 6;

const char *glyph(char c) {
  const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const Glyph &g : kFont)
    if (g.c == u) return g.rows;
  return nullptr;
}

void put(Picture &p, std::int64_t y, std::int64_t x, std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  if (y < 0 || x < 0 || y >= p.height || x >= p.width) return;
  std::uint8_t *px = p.rgb.data() + (y * p.width + x) * 3;
  px[0] = r, px[1] = g, px[2] = b;
}

// `text` in white at (x, y), each font pixel `scale` x `scale`.
void draw_text(Picture &p, std::int64_t x, std::int64_t y, const std::string &text, int scale) {
  for (std::size_t i = 0; i < text.size(); i++) {
    const char *rows = glyph(text[i]);
    if (!rows) continue;
    for (int gy = 0; gy < kGlyphH; gy++)
      for (int gx = 0; gx < kGlyphW; gx++)
        if (rows[gy * kGlyphW + gx] == '#')
          for (int sy = 0; sy < scale; sy++)
            for (int sx = 0; sx < scale; sx++)
              put(p, y + gy * scale + sy, x + (std::int64_t(i) * kAdvance + gx) * scale + sx, 255, 255, 255);
  }
}

int text_scale(std::int64_t width) { return width >= 200 ? 2 : 1; }
std::int64_t text_height(int scale) { return (kGlyphH + 3) * scale; }

void blit(Picture &to, const Picture &from, std::int64_t y0, std::int64_t x0) {
  for (std::int64_t y = 0; y < from.height; y++)
    std::memcpy(to.rgb.data() + ((y0 + y) * to.width + x0) * 3, from.rgb.data() + y * from.width * 3,
                static_cast<std::size_t>(from.width * 3));
}

// IEC 61966-2-1: linear [0, 1] -> 8-bit sRGB.
std::uint8_t encode_srgb(double v) {
  v = std::isnan(v) ? 0 : std::clamp(v, 0.0, 1.0);
  const double e = v <= 0.0031308 ? 12.92 * v : 1.055 * std::pow(v, 1 / 2.4) - 0.055;
  return static_cast<std::uint8_t>(std::lround(e * 255));
}

// The gain that puts the 99th percentile of `values` at 1 (1 when they are all <= 0 or not finite):
// the nearest rank, element ceil(0.99 n) of n (the one above it took an image of 100 pixels'
// largest, one bright pixel dimming the rest).
double percentile_gain(std::vector<double> values) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }), values.end());
  if (values.empty()) return 1;
  const std::size_t k = (values.size() * 99 + 99) / 100 - 1;
  std::nth_element(values.begin(), values.begin() + std::ptrdiff_t(k), values.end());
  return values[k] > 0 ? 1 / values[k] : 1;
}

// Each band's share of the spectrum: half the distance to each neighbour (a lone band: 1).
std::vector<double> band_widths(const std::vector<double> &nm) {
  std::vector<double> w(nm.size(), 1);
  for (std::size_t c = 0; c < nm.size() && nm.size() > 1; c++) {
    const double lo = c == 0 ? nm[1] - nm[0] : nm[c] - nm[c - 1];
    const double hi = c + 1 == nm.size() ? nm[c] - nm[c - 1] : nm[c + 1] - nm[c];
    w[c] = std::abs(lo + hi) / 2;
  }
  return w;
}

std::string wavelength_label(double nm) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f NM", nm);
  return buf;
}

}  // namespace

const std::vector<double> &kaist_wavelengths() {
  static const std::vector<double> nm = {453.3, 457.6, 462.1, 466.8, 471.6, 476.5, 481.6, 486.9, 492.4, 498.0,
                                         503.9, 509.9, 516.2, 522.7, 529.5, 536.5, 543.8, 551.4, 558.6, 567.5,
                                         575.3, 584.3, 594.4, 604.2, 614.4, 625.1, 636.3, 648.1};
  return nm;
}

namespace {

std::vector<double> wavelengths_of(const std::optional<std::string> &option, const std::vector<double> &from_file,
                                   std::int64_t bands, const std::string &cube) {
  if (option) {
    const std::size_t colon = option->find(':');
    if (colon != std::string::npos) {
      const auto a = number_list(option->substr(0, colon)), b = number_list(option->substr(colon + 1));
      if (!a || !b || a->size() != 1 || b->size() != 1 || !((*a)[0] > 0) || !((*b)[0] > 0))
        throw UsageError("--wavelengths: expected START:STOP in nm, got '" + *option + "'");
      std::vector<double> nm;
      for (std::int64_t c = 0; c < bands; c++)
        nm.push_back(bands == 1 ? (*a)[0] : (*a)[0] + ((*b)[0] - (*a)[0]) * double(c) / double(bands - 1));
      return nm;
    }
    const auto listed = number_list(*option);
    if (!listed || std::int64_t(listed->size()) != bands)
      throw UsageError("--wavelengths: expected " + std::to_string(bands) + " numbers (nm) for the " +
                       std::to_string(bands) + " bands of " + cube + ", or START:STOP, got '" + *option + "'");
    return *listed;
  }
  if (!from_file.empty() && std::int64_t(from_file.size()) == bands) return from_file;
  if (!from_file.empty())
    throw UsageError(cube + ": its files give " + std::to_string(from_file.size()) + " wavelengths for " +
                     std::to_string(bands) + " bands: give --wavelengths (a list, or START:STOP)");
  if (bands == std::int64_t(kaist_wavelengths().size())) return kaist_wavelengths();
  throw UsageError(cube + " has " + std::to_string(bands) +
                   " bands and no wavelengths of its own: give --wavelengths " +
                   "(a list, or START:STOP); only 28 bands default to the KAIST wavelengths");
}

}  // namespace

// Wavelengths of which none is visible (the colour matching functions' 380-780 nm) drew a black
// colour picture: micrometres, or a typo. A montage only labels its bands with them.
std::vector<double> band_wavelengths(const std::optional<std::string> &option, const std::vector<double> &from_file,
                                     std::int64_t bands, const std::string &cube, bool colour) {
  std::vector<double> nm = wavelengths_of(option, from_file, bands, cube);
  if (colour && std::none_of(nm.begin(), nm.end(), [](double w) { return w >= 380 && w <= 780; })) {
    char range[64];
    std::snprintf(range, sizeof range, "%g to %g", nm.front(), nm.back());
    throw UsageError((option ? "--wavelengths " + *option : cube + "'s wavelengths, " + range) +
                     ": no band within the visible 380-780 nm, so the picture would be black; give them in nm");
  }
  return nm;
}

std::optional<double> parse_gain(const std::string &text) {
  if (text == "auto") return std::nullopt;
  const auto n = number_list(text);
  if (!n || n->size() != 1 || !((*n)[0] > 0))
    throw UsageError("--gain: expected a number > 0 or auto, got '" + text + "'");
  return (*n)[0];
}

// Wyman, Sloan and Shirley, "Simple Analytic Approximations to the CIE XYZ Color Matching
// Functions", JCGT 2(2), 2013: the multi-lobe piecewise-Gaussian fit of the CIE 1931 2-degree
// observer (their equation 2 and table 1), within about 1% of the CIE tables over 380-780 nm.
void cie1931(double nm, double &x, double &y, double &z) {
  auto lobe = [nm](double mu, double sigma_below, double sigma_above) {
    const double t = (nm - mu) / (nm < mu ? sigma_below : sigma_above);
    return std::exp(-0.5 * t * t);
  };
  x = 1.056 * lobe(599.8, 37.9, 31.0) + 0.362 * lobe(442.0, 16.0, 26.7) - 0.065 * lobe(501.1, 20.4, 26.2);
  y = 0.821 * lobe(568.8, 46.9, 40.5) + 0.286 * lobe(530.9, 16.3, 31.1);
  z = 1.217 * lobe(437.0, 11.8, 36.0) + 0.681 * lobe(459.0, 26.0, 13.8);
}

template <class T>
Picture render_colour(const T *cube, std::int64_t bands, std::int64_t height, std::int64_t width,
                      const std::vector<double> &nm, std::optional<double> gain) {
  // Per-band weights of X, Y, Z; a flat spectrum of 1 sums to the D65 white (0.95047, 1, 1.08883).
  const std::array<double, 3> white = {0.95047, 1.0, 1.08883};
  const std::vector<double> widths = band_widths(nm);
  std::vector<std::array<double, 3>> w(static_cast<std::size_t>(bands));
  std::array<double, 3> sum = {0, 0, 0};
  for (std::int64_t c = 0; c < bands; c++) {
    double x, y, z;
    cie1931(nm[std::size_t(c)], x, y, z);
    w[std::size_t(c)] = {x * widths[std::size_t(c)], y * widths[std::size_t(c)], z * widths[std::size_t(c)]};
    for (int k = 0; k < 3; k++) sum[std::size_t(k)] += w[std::size_t(c)][std::size_t(k)];
  }
  for (auto &wc : w)
    for (int k = 0; k < 3; k++)
      wc[std::size_t(k)] *= sum[std::size_t(k)] > 0 ? white[std::size_t(k)] / sum[std::size_t(k)] : 0;
  const std::int64_t n = height * width;
  std::vector<double> xyz(static_cast<std::size_t>(n * 3), 0.0);
  for (std::int64_t c = 0; c < bands; c++)
    for (std::int64_t i = 0; i < n; i++)
      for (int k = 0; k < 3; k++)
        xyz[std::size_t(i * 3 + k)] += double(cube[c * n + i]) * w[std::size_t(c)][std::size_t(k)];
  double g = 1;
  if (gain) {
    g = *gain;
  } else {
    std::vector<double> luminance(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; i++) luminance[std::size_t(i)] = xyz[std::size_t(i * 3 + 1)];
    g = percentile_gain(std::move(luminance));
  }
  // XYZ (D65) -> linear sRGB, IEC 61966-2-1.
  const double m[3][3] = {{3.2406, -1.5372, -0.4986}, {-0.9689, 1.8758, 0.0415}, {0.0557, -0.2040, 1.0570}};
  Picture p(height, width, 0);
  for (std::int64_t i = 0; i < n; i++)
    for (int k = 0; k < 3; k++) {
      const double *v = &xyz[std::size_t(i * 3)];
      p.rgb[std::size_t(i * 3 + k)] = encode_srgb(g * (m[k][0] * v[0] + m[k][1] * v[1] + m[k][2] * v[2]));
    }
  return p;
}

template <class T>
Picture render_montage(const T *cube, std::int64_t bands, std::int64_t height, std::int64_t width,
                       const std::vector<double> &nm, std::optional<double> gain) {
  const std::int64_t n = height * width;
  const double g = gain ? *gain : percentile_gain(std::vector<double>(cube, cube + bands * n));
  const int scale = text_scale(width);
  const std::int64_t gap = 4, label = text_height(scale);
  const auto cols = static_cast<std::int64_t>(std::ceil(std::sqrt(double(bands))));
  const std::int64_t rows = (bands + cols - 1) / cols;
  Picture p(rows * (label + height + gap) + gap, cols * (width + gap) + gap, 32);
  for (std::int64_t c = 0; c < bands; c++) {
    const std::int64_t y0 = gap + (c / cols) * (label + height + gap), x0 = gap + (c % cols) * (width + gap);
    draw_text(p, x0, y0 + scale, wavelength_label(nm[std::size_t(c)]), scale);
    Picture band(height, width, 0);
    for (std::int64_t i = 0; i < n; i++) {
      const std::uint8_t v = encode_srgb(g * double(cube[c * n + i]));
      band.rgb[std::size_t(i * 3)] = band.rgb[std::size_t(i * 3 + 1)] = band.rgb[std::size_t(i * 3 + 2)] = v;
    }
    blit(p, band, y0 + label, x0);
  }
  return p;
}

Picture side_by_side(const std::vector<Panel> &panels) {
  const std::int64_t gap = 6;
  std::int64_t width = gap, height = 0;
  std::size_t lines = 0;
  int scale = 2;
  for (const Panel &panel : panels) {
    width += panel.picture.width + gap;
    height = std::max(height, panel.picture.height);
    lines = std::max(lines, panel.lines.size());
    scale = std::min(scale, text_scale(panel.picture.width));
  }
  Picture p(gap + height + std::int64_t(lines) * text_height(scale) + gap, width, 32);
  std::int64_t x = gap;
  for (const Panel &panel : panels) {
    blit(p, panel.picture, gap, x);
    for (std::size_t l = 0; l < panel.lines.size(); l++)
      draw_text(p, x, gap + height + std::int64_t(l) * text_height(scale) + scale * 2, panel.lines[l], scale);
    x += panel.picture.width + gap;
  }
  return p;
}

void write_picture(const Destination &file, const Picture &picture) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(picture.width);
  image.height = static_cast<png_uint_32>(picture.height);
  image.format = PNG_FORMAT_RGB;
  OutputFile out(file);
  if (!png_image_write_to_stdio(&image, out.get(), 0, picture.rgb.data(), 0, nullptr))
    throw Failure(file.target + ": cannot write the PNG: " + image.message);
  out.close();
}

template Picture render_colour<float>(const float *, std::int64_t, std::int64_t, std::int64_t,
                                      const std::vector<double> &, std::optional<double>);
template Picture render_colour<double>(const double *, std::int64_t, std::int64_t, std::int64_t,
                                       const std::vector<double> &, std::optional<double>);
template Picture render_montage<float>(const float *, std::int64_t, std::int64_t, std::int64_t,
                                       const std::vector<double> &, std::optional<double>);
template Picture render_montage<double>(const double *, std::int64_t, std::int64_t, std::int64_t,
                                        const std::vector<double> &, std::optional<double>);

}  // namespace hpipe::cli
