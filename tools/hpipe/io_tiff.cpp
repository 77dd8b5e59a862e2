#include "io_tiff.h"

#include <tiffio.h>

#include <cstdarg>
#include <cstring>
#include <memory>
#include <vector>

#include "errors.h"
#include "file.h"
#include "formats.h"

namespace hpipe::cli {

namespace {

// libtiff reports through handlers that print to stderr; keep the last error for our own line
// and drop warnings (unknown tags and the like).
std::string &last_tiff_error() {
  static std::string message;
  return message;
}

void capture_tiff_error(const char *module, const char *format, va_list args) {
  char buf[512];
  std::vsnprintf(buf, sizeof buf, format, args);
  last_tiff_error() = (module ? std::string(module) + ": " : std::string()) + buf;
}

void quiet_tiff() {
  static const bool once = [] {
    TIFFSetErrorHandler(capture_tiff_error);
    TIFFSetWarningHandler(nullptr);
    return true;
  }();
  (void)once;
}

std::string tiff_reason() {
  const std::string m = last_tiff_error();
  last_tiff_error().clear();
  return m.empty() ? "" : " (libtiff: " + m + ")";
}

struct TiffCloser {
  void operator()(TIFF *t) const { TIFFClose(t); }
};
using TiffFile = std::unique_ptr<TIFF, TiffCloser>;

struct PageFormat {
  std::uint32_t width = 0, height = 0;
  std::uint16_t bits = 0, samples = 0, sample_format = 0, planar = 0, compression = 0;
  std::uint32_t depth = 1;  // ImageDepth (SGI's volumes in one page): hpipe reads one slice a page
  // A Predictor tag that the page's codec does not take (PackBits, none): libtiff keeps it as an
  // unknown field and returns the differences as they are stored.
  bool unhandled_predictor = false;
  bool operator==(const PageFormat &o) const {
    return width == o.width && height == o.height && bits == o.bits && samples == o.samples &&
           sample_format == o.sample_format;
  }
};

std::string sample_name(const PageFormat &p) {
  const char *kind = p.sample_format == SAMPLEFORMAT_IEEEFP ? "float"
                     : p.sample_format == SAMPLEFORMAT_INT  ? "signed integer"
                                                            : "unsigned integer";
  return std::to_string(p.bits) + "-bit " + kind;
}

// "7 x 9 (H x W) 16-bit unsigned integer x 1": a page's size and samples, as an error names them.
std::string page_size(const PageFormat &p) {
  return std::to_string(p.height) + " x " + std::to_string(p.width) + " (H x W) " + sample_name(p) + " x " +
         std::to_string(p.samples);
}

std::optional<DType> dtype_of(const PageFormat &p) {
  if (p.sample_format == SAMPLEFORMAT_UINT && p.bits == 8) return DType::u8;
  if (p.sample_format == SAMPLEFORMAT_UINT && p.bits == 16) return DType::u16;
  if (p.sample_format == SAMPLEFORMAT_IEEEFP && p.bits == 32) return DType::f32;
  if (p.sample_format == SAMPLEFORMAT_IEEEFP && p.bits == 64) return DType::f64;
  return std::nullopt;
}

PageFormat page_format(TIFF *t) {
  PageFormat p;
  TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &p.width);
  TIFFGetField(t, TIFFTAG_IMAGELENGTH, &p.height);
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &p.bits);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &p.samples);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &p.sample_format);
  TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &p.planar);
  TIFFGetFieldDefaulted(t, TIFFTAG_COMPRESSION, &p.compression);
  TIFFGetFieldDefaulted(t, TIFFTAG_IMAGEDEPTH, &p.depth);
  const TIFFField *predictor = TIFFFindField(t, TIFFTAG_PREDICTOR, TIFF_ANY);
  p.unhandled_predictor = predictor && TIFFFieldIsAnonymous(predictor);
  return p;
}

// Copies the samples of a decoded block (rows x cols pixels of `spp` interleaved samples, or of
// one sample when `plane` >= 0) into the bands at (row0, col0), clipped to the image.
void place(const unsigned char *block, std::uint32_t block_w, std::uint32_t rows, std::uint32_t row0,
           std::uint32_t col0, int plane, const PageFormat &p, std::size_t element, std::int64_t band0,
           unsigned char *out) {
  const std::size_t spp = plane >= 0 ? 1 : p.samples;
  const std::int64_t band_bytes = std::int64_t(p.width) * p.height * std::int64_t(element);
  for (std::uint32_t r = 0; r < rows && row0 + r < p.height; r++)
    for (std::uint32_t c = 0; c < block_w && col0 + c < p.width; c++)
      for (std::size_t s = 0; s < spp; s++) {
        const std::int64_t band = band0 + (plane >= 0 ? plane : std::int64_t(s));
        std::memcpy(out + band * band_bytes + (std::int64_t(row0 + r) * p.width + col0 + c) * std::int64_t(element),
                    block + ((std::size_t(r) * block_w + c) * spp + s) * element, element);
      }
}

void read_page(TIFF *t, const std::string &path, std::int64_t page, const PageFormat &p, std::size_t element,
               std::int64_t band0, unsigned char *out) {
  const int planes = p.planar == PLANARCONFIG_SEPARATE ? p.samples : 1;
  // A decoded row or tile must hold the samples `place` copies out of it (not so with, e.g.,
  // subsampled YCbCr, which is refused).
  const std::int64_t samples_per_pixel = planes > 1 ? 1 : p.samples;
  auto holds = [&](tmsize_t bytes, std::int64_t pixels) {
    return bytes >= pixels * samples_per_pixel * std::int64_t(element);
  };
  auto failed = [&](const char *what) {
    return Failure(path + ": page " + std::to_string(page) + ": cannot read " + what + ": truncated or corrupt" +
                   tiff_reason());
  };
  if (TIFFIsTiled(t)) {
    std::uint32_t tw = 0, th = 0;
    TIFFGetField(t, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(t, TIFFTAG_TILELENGTH, &th);
    const tmsize_t size = TIFFTileSize(t);
    if (tw == 0 || th == 0 || !holds(size, std::int64_t(tw) * th)) throw failed("its tile layout");
    std::vector<unsigned char> tile(static_cast<std::size_t>(size));
    for (int s = 0; s < planes; s++)
      for (std::uint32_t y = 0; y < p.height; y += th)
        for (std::uint32_t x = 0; x < p.width; x += tw) {
          if (TIFFReadTile(t, tile.data(), x, y, 0, static_cast<std::uint16_t>(s)) < 0) throw failed("a tile");
          place(tile.data(), tw, th, y, x, planes > 1 ? s : -1, p, element, band0, out);
        }
    return;
  }
  const tmsize_t size = TIFFScanlineSize(t);
  if (!holds(size, p.width)) throw failed("its strip layout");
  std::vector<unsigned char> line(static_cast<std::size_t>(size));
  for (int s = 0; s < planes; s++)
    for (std::uint32_t y = 0; y < p.height; y++) {
      if (TIFFReadScanline(t, line.data(), y, static_cast<std::uint16_t>(s)) < 0) throw failed("a row");
      place(line.data(), p.width, 1, y, 0, planes > 1 ? s : -1, p, element, band0, out);
    }
}

}  // namespace

bool has_tiff_magic(const std::string &path) {
  unsigned char head[4];
  try {
    InputFile f(path);
    if (f.read(head, 4) != 4) return false;
  } catch (const Failure &) {
    return false;
  }
  const bool intel = head[0] == 'I' && head[1] == 'I' && (head[2] == 42 || head[2] == 43) && head[3] == 0;
  const bool motorola = head[0] == 'M' && head[1] == 'M' && head[2] == 0 && (head[3] == 42 || head[3] == 43);
  return intel || motorola;
}

RawArray read_tiff(const std::string &path, std::string &detail) {
  quiet_tiff();
  const std::int64_t file_bytes = InputFile(path).size();
  last_tiff_error().clear();
  TiffFile t(TIFFOpen(path.c_str(), "rm"));  // m: read through stdio, never map the file
  if (!t) throw Failure(path + ": not a TIFF file, or corrupt" + tiff_reason());
  // Every page first: the same size and sample type, and a bounded total.
  std::vector<PageFormat> pages;
  std::int64_t declared = 0;
  bool compressed = false;
  do {
    const PageFormat p = page_format(t.get());
    const std::string where = path + ": page " + std::to_string(pages.size());
    if (p.width == 0 || p.height == 0 || p.samples == 0)
      throw Failure(where + ": has no pixels (corrupt)" + tiff_reason());
    if (!dtype_of(p))
      throw Failure(where + ": unsupported sample type " + sample_name(p) +
                    " (hpipe reads 8/16-bit unsigned integers and 32/64-bit floats)");
    if (!pages.empty() && !(p == pages[0]))
      throw Failure(where + ": is " + page_size(p) + ", page 0 " + page_size(pages[0]) +
                    " (every page must be a band of the same size and type)");
    if (!pages.empty() && p.samples != 1)
      throw Failure(where + ": multi-page files must hold one sample per pixel per page");
    if (p.depth != 1)
      throw Failure(where + ": holds a volume of " + std::to_string(p.depth) +
                    " slices (ImageDepth); hpipe reads one image per page (save the slices as pages)");
    if (p.unhandled_predictor)
      throw Failure(where + ": has a Predictor with compression " + std::to_string(p.compression) +
                    ", which libtiff does not undo (save with LZW or Deflate, or without the predictor)");
    compressed = compressed || p.compression != COMPRESSION_NONE;
    std::int64_t pixels = 0, page = 0;  // declared is -1 once past 2^63
    if (declared < 0 || __builtin_mul_overflow(std::int64_t(p.width), std::int64_t(p.height), &pixels) ||
        __builtin_mul_overflow(pixels, std::int64_t(p.samples) * (p.bits / 8), &page) ||
        __builtin_add_overflow(declared, page, &declared))
      declared = -1;
    check_declared_size(path,
                        std::to_string(pages.size() + 1) + " pages of " + std::to_string(p.height) + " x " +
                            std::to_string(p.width) + " (H x W)",
                        declared, 1, file_bytes, compressed);
    pages.push_back(p);
  } while (TIFFReadDirectory(t.get()));
  if (!last_tiff_error().empty()) throw Failure(path + ": corrupt page directory" + tiff_reason());

  const PageFormat &first = pages[0];
  RawArray a;
  a.dtype = *dtype_of(first);
  const std::int64_t bands = pages.size() > 1 ? std::int64_t(pages.size()) : first.samples;
  a.shape = {bands, first.height, first.width};
  a.bytes.resize(static_cast<std::size_t>(declared));
  for (std::size_t i = 0; i < pages.size(); i++) {
    if (!TIFFSetDirectory(t.get(), static_cast<tdir_t>(i)))
      throw Failure(path + ": cannot reach page " + std::to_string(i) + tiff_reason());
    read_page(t.get(), path, std::int64_t(i), pages[i], size_of(a.dtype), std::int64_t(i), a.bytes.data());
  }
  if (bands == 1) a.shape.erase(a.shape.begin());
  detail = pages.size() > 1
               ? std::to_string(pages.size()) + " pages"
               : "1 page" + (first.samples > 1 ? ", " + std::to_string(first.samples) + " samples" : std::string());
  return a;
}

void write_tiff(const Destination &file, const RawArray &a) {
  const std::string &path = file.target;
  quiet_tiff();
  if (a.shape.size() < 2 || a.shape.size() > 3)
    throw UsageError(path + ": TIFF holds images (H, W) or band stacks (C, H, W), not shape " + shape_string(a.shape));
  const std::int64_t bands = a.shape.size() == 3 ? a.shape[0] : 1;
  const std::int64_t h = a.shape[a.shape.size() - 2], w = a.shape.back();
  if (bands == 0 || h == 0 || w == 0)  // a TIFF has at least one page of at least one pixel
    throw Failure(path + ": TIFF cannot hold the empty shape " + shape_string(a.shape) +
                  " (.npy, .mat, .h5 and ENVI can)");
  const std::size_t element = size_of(a.dtype);
  const bool big = a.bytes.size() > (std::size_t(1) << 32) - (std::size_t(1) << 24);  // room for the directories
  last_tiff_error().clear();
  TiffFile t(TIFFOpen(file.path.c_str(), big ? "w8" : "w"));
  if (!t) throw Failure(path + ": cannot create the TIFF file" + tiff_reason());
  const bool floats = a.dtype == DType::f32 || a.dtype == DType::f64;
  for (std::int64_t b = 0; b < bands; b++) {
    TIFF *f = t.get();
    TIFFSetField(f, TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(w));
    TIFFSetField(f, TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(h));
    TIFFSetField(f, TIFFTAG_BITSPERSAMPLE, static_cast<std::uint16_t>(element * 8));
    TIFFSetField(f, TIFFTAG_SAMPLESPERPIXEL, static_cast<std::uint16_t>(1));
    TIFFSetField(f, TIFFTAG_SAMPLEFORMAT, floats ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT);
    TIFFSetField(f, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(f, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(f, TIFFTAG_COMPRESSION, COMPRESSION_NONE);
    TIFFSetField(f, TIFFTAG_ROWSPERSTRIP, TIFFDefaultStripSize(f, 0));
    if (bands > 1) {
      TIFFSetField(f, TIFFTAG_SUBFILETYPE, FILETYPE_PAGE);
      TIFFSetField(f, TIFFTAG_PAGENUMBER, static_cast<std::uint16_t>(b), static_cast<std::uint16_t>(bands));
    }
    for (std::int64_t y = 0; y < h; y++) {
      auto *row = const_cast<unsigned char *>(a.bytes.data()) + ((b * h + y) * w) * std::int64_t(element);
      if (TIFFWriteScanline(f, row, static_cast<std::uint32_t>(y), 0) < 0)
        throw Failure(path + ": write error" + tiff_reason());
    }
    if (!TIFFWriteDirectory(f)) throw Failure(path + ": write error" + tiff_reason());
  }
  // TIFFClose drops a failed flush's error: flush first.
  if (!TIFFFlush(t.get()) || !last_tiff_error().empty()) throw Failure(path + ": write error" + tiff_reason());
}

}  // namespace hpipe::cli
