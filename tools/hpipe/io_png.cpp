#include "io_png.h"

#include <png.h>

#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

#include "errors.h"
#include "file.h"

namespace hpipe::cli {

namespace {

const char kScaleKey[] = "hpipe-scale";
// Deflate expands at most 1032:1, so a stream of n bytes never decodes to more than that.
constexpr std::int64_t kMaxInflation = 1032;

// libpng reports errors through longjmp. The functions that call it hold only trivially
// destructible locals, and the message lands here.
struct Session {
  char message[256];
  char warning[128];  // the last one: libpng's errors alone can be vague ("Invalid IHDR data")
  const unsigned char *data;
  std::size_t size, pos;
};

void on_error(png_structp png, png_const_charp message) {
  auto *s = static_cast<Session *>(png_get_error_ptr(png));
  if (s->warning[0])
    std::snprintf(s->message, sizeof s->message, "%s (%s)", message, s->warning);
  else
    std::snprintf(s->message, sizeof s->message, "%s", message);
  png_longjmp(png, 1);
}
void on_warning(png_structp png, png_const_charp message) {
  auto *s = static_cast<Session *>(png_get_error_ptr(png));
  std::snprintf(s->warning, sizeof s->warning, "%s", message);
}

void read_memory(png_structp png, png_bytep out, png_size_t n) {
  auto *s = static_cast<Session *>(png_get_io_ptr(png));
  if (n > s->size - s->pos) png_error(png, "unexpected end of file (truncated)");
  std::memcpy(out, s->data + s->pos, n);
  s->pos += n;
}

// Ancillary chunks hpipe never reads, which libpng would otherwise decode (inflate, allocate):
// libpng skips them unread. tEXt (hpipe-scale) and tRNS (alpha to strip) stay.
const png_byte kSkippedChunks[] = "zTXt\0iTXt\0iCCP\0sPLT\0eXIf\0pCAL\0sCAL\0hIST\0";

std::string printable(const unsigned char *p, std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; i++) s += p[i] >= 0x20 && p[i] < 0x7f ? char(p[i]) : '?';
  return s;
}

// The first chunk that declares more data than the file holds after it, described; "" when none.
// libpng allocates (and zeroes) a chunk's declared length before it reads the data, and neither
// png_set_chunk_malloc_max nor a user limit bounds that for text chunks: a 44-byte file with a
// tEXt chunk of 2^31 - 1 bytes cost 2 GB. Checked first, no chunk asks for more than the file's size.
std::string overlong_chunk(const unsigned char *data, std::size_t size) {
  for (std::size_t pos = 8; size - pos >= 8;) {
    const std::uint32_t length = png_get_uint_32(data + pos);
    const std::size_t after = size - pos - 8;  // type and length read; data and CRC follow
    if (length > after || after - length < 4)
      return "chunk '" + printable(data + pos + 4, 4) + "' declares " + std::to_string(length) + " bytes, but only " +
             std::to_string(after < 4 ? 0 : after - 4) + " follow it";
    if (std::memcmp(data + pos + 4, "IEND", 4) == 0) break;
    pos += 12 + std::size_t(length);
  }
  return "";
}

struct Header {
  png_uint_32 width, height;
  int channels, bit_depth;
  std::size_t row_bytes;
  bool has_range;
  double lo, hi;
};

// Reads the header and sets up the transforms; false on a libpng error (in s.message).
bool read_header(png_structp png, png_infop info, Header *h) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_user_limits(png, kPngMaxSide, kPngMaxSide);
  png_set_chunk_malloc_max(png, 16u << 20);
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, kSkippedChunks, int(sizeof kSkippedChunks / 5));
  png_set_read_fn(png, png_get_error_ptr(png), read_memory);
  png_read_info(png, info);
  const int color = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (color & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
  if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_strip_alpha(png);
  if (depth == 16) png_set_swap(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  h->width = png_get_image_width(png, info);
  h->height = png_get_image_height(png, info);
  h->channels = png_get_channels(png, info);
  h->bit_depth = png_get_bit_depth(png, info);
  h->row_bytes = png_get_rowbytes(png, info);
  return true;
}

// Reads the rows, then the chunks after them: a text chunk may come before or after the image
// data (hpipe-scale after IDAT was ignored), so the range is looked for once all are read.
bool read_rows(png_structp png, png_infop info, png_bytepp rows, Header *h) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  png_read_end(png, info);
  h->has_range = false;
  png_textp text = nullptr;
  int n = 0;
  png_get_text(png, info, &text, &n);
  for (int i = 0; i < n; i++)
    if (std::strcmp(text[i].key, kScaleKey) == 0 && std::sscanf(text[i].text, "%lf %lf", &h->lo, &h->hi) == 2)
      h->has_range = true;
  return true;
}

struct ReadStructs {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~ReadStructs() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};

struct WriteJob {
  std::vector<unsigned char> *encoded;  // the file's bytes, appended
  const unsigned char *pixels;
  png_uint_32 width, height;
  int bit_depth;
  char range_text[80];  // "" when none
};

void append_bytes(png_structp png, png_bytep data, png_size_t n) {
  auto *encoded = static_cast<std::vector<unsigned char> *>(png_get_io_ptr(png));
  encoded->insert(encoded->end(), data, data + n);
}
void flush_nothing(png_structp) {}

bool write_rows(png_structp png, png_infop info, const WriteJob *job, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_write_fn(png, job->encoded, append_bytes, flush_nothing);
  png_set_user_limits(png, kPngMaxSide, kPngMaxSide);
  png_set_IHDR(png, info, job->width, job->height, job->bit_depth, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_text text{};
  if (job->range_text[0]) {
    text.compression = PNG_TEXT_COMPRESSION_NONE;
    text.key = const_cast<char *>(kScaleKey);
    text.text = const_cast<char *>(job->range_text);
    png_set_text(png, info, &text, 1);
  }
  png_write_info(png, info);
  if (job->bit_depth == 16) png_set_swap(png);
  png_write_image(png, rows);
  png_write_end(png, info);
  return true;
}

struct WriteStructs {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~WriteStructs() { png_destroy_write_struct(&png, info ? &info : nullptr); }
};

}  // namespace

bool is_png(const unsigned char *head, std::size_t size) { return size >= 8 && png_sig_cmp(head, 0, 8) == 0; }

PngImage read_png(const std::string &path) {
  InputFile in(path);
  return read_png(in);
}

PngImage read_png(InputFile &in) {
  const std::string &path = in.path();
  if (in.size() == 0) throw Failure(path + ": empty file (0 bytes)");
  const std::vector<unsigned char> bytes = in.read_all();
  if (!is_png(bytes.data(), bytes.size())) throw Failure(path + ": not a PNG file (wrong magic)");
  const std::string overlong = overlong_chunk(bytes.data(), bytes.size());
  if (!overlong.empty()) throw Failure(path + ": corrupt PNG: " + overlong);

  Session s{};
  s.data = bytes.data();
  s.size = bytes.size();
  ReadStructs r;
  r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s, on_error, on_warning);
  if (!r.png || !(r.info = png_create_info_struct(r.png))) throw Failure(path + ": out of memory starting libpng");
  Header h{};
  if (!read_header(r.png, r.info, &h)) throw Failure(path + ": corrupt PNG: " + s.message);
  if (h.width == 0 || h.height == 0) throw Failure(path + ": corrupt PNG: zero image size");
  if (h.bit_depth != 8 && h.bit_depth != 16)
    throw Failure(path + ": unsupported PNG bit depth " + std::to_string(h.bit_depth));
  const std::int64_t decoded = std::int64_t(h.height) * std::int64_t(h.row_bytes);
  if (decoded / kMaxInflation > std::int64_t(bytes.size()))
    throw Failure(path + ": corrupt PNG: declares " + std::to_string(h.height) + " x " + std::to_string(h.width) +
                  " (H x W) pixels (" + std::to_string(decoded) + " bytes), more than its " +
                  std::to_string(bytes.size()) + " bytes can hold");

  std::vector<unsigned char> pixels(static_cast<std::size_t>(decoded));
  std::vector<png_bytep> rows(h.height);
  for (png_uint_32 y = 0; y < h.height; y++) rows[y] = pixels.data() + std::size_t(y) * h.row_bytes;
  if (!read_rows(r.png, r.info, rows.data(), &h)) throw Failure(path + ": corrupt PNG: " + s.message);
  if (h.has_range && !(std::isfinite(h.lo) && std::isfinite(h.hi) && h.lo < h.hi)) {
    char range[80];
    std::snprintf(range, sizeof range, "%g %g", h.lo, h.hi);
    throw Failure(path + ": corrupt PNG: its " + kScaleKey + " text '" + range +
                  "' is not a range MIN MAX of finite numbers with MIN < MAX");
  }

  PngImage out;
  RawArray &a = out.array;
  a.dtype = h.bit_depth == 16 ? DType::u16 : DType::u8;
  const std::size_t es = size_of(a.dtype), plane = std::size_t(h.width) * h.height;
  if (h.channels == 1) {
    a.shape = {h.height, h.width};
    a.bytes = std::move(pixels);
  } else {  // interleaved RGB -> planar (3, H, W)
    a.shape = {3, h.height, h.width};
    a.bytes.resize(3 * plane * es);
    for (std::size_t i = 0; i < plane; i++)
      for (std::size_t c = 0; c < 3; c++) std::memcpy(&a.bytes[(c * plane + i) * es], &pixels[(i * 3 + c) * es], es);
  }
  if (h.has_range) out.range = ValueRange{h.lo, h.hi};
  return out;
}

void write_png(const std::string &path, const RawArray &image, const std::optional<ValueRange> &range) {
  OutputFile out(path);
  write_png(out, image, range);
}

void write_png(OutputFile &out, const RawArray &image, const std::optional<ValueRange> &range) {
  const std::vector<unsigned char> encoded = encode_png(out.target(), image, range);
  out.write(encoded.data(), encoded.size());
  out.close();
}

std::vector<unsigned char> encode_png(const std::string &path, const RawArray &image,
                                      const std::optional<ValueRange> &range) {
  std::vector<unsigned char> encoded;
  // Deflate can grow incompressible pixels a little, and PNG adds a filter byte a row and chunks.
  encoded.reserve(image.bytes.size() + image.bytes.size() / 64 + std::size_t(image.shape.at(0)) + 1024);
  WriteJob job{};
  job.encoded = &encoded;
  job.pixels = image.bytes.data();
  job.height = static_cast<png_uint_32>(image.shape.at(0));
  job.width = static_cast<png_uint_32>(image.shape.at(1));
  job.bit_depth = image.dtype == DType::u16 ? 16 : 8;
  if (range) std::snprintf(job.range_text, sizeof job.range_text, "%.17g %.17g", range->lo, range->hi);
  const std::size_t row_bytes = std::size_t(job.width) * size_of(image.dtype);
  std::vector<png_bytep> rows(job.height);
  for (png_uint_32 y = 0; y < job.height; y++)
    rows[y] = const_cast<png_bytep>(image.bytes.data()) + std::size_t(y) * row_bytes;

  Session s{};
  WriteStructs w;
  w.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &s, on_error, on_warning);
  if (!w.png || !(w.info = png_create_info_struct(w.png))) throw Failure(path + ": out of memory starting libpng");
  if (!write_rows(w.png, w.info, &job, rows.data())) throw Failure(path + ": cannot write PNG: " + s.message);
  return encoded;
}

}  // namespace hpipe::cli
