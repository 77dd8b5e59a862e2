#include "io_npy.h"

#include <cctype>
#include <cstring>
#include <map>

#include "errors.h"
#include "file.h"

namespace hpipe::cli {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the .npy reader assumes a little-endian host");

namespace {

const char kMagic[] = "\x93NUMPY";  // 6 bytes

[[noreturn]] void corrupt(const std::string &path, const std::string &what) {
  throw Failure(path + ": not a valid .npy file: " + what);
}

// The header dict's entries, key -> value text (a string's without its quotes, a tuple's with its
// parentheses). As NumPy, the keys must be 'descr', 'fortran_order' and 'shape': another key makes
// the header corrupt (a value holding another key's text was read as that key's).
std::map<std::string, std::string> header_entries(const std::string &path, const std::string &header) {
  std::map<std::string, std::string> entries;
  std::size_t p = header.find('{');
  if (p == std::string::npos) corrupt(path, "the header is not a dict");
  const auto skip_spaces = [&] {
    while (++p < header.size() && std::isspace(static_cast<unsigned char>(header[p]))) {}
  };
  const auto quoted = [&]() -> std::string {  // at a quote; ends past the closing one
    const std::size_t e = header.find(header[p], p + 1);
    if (e == std::string::npos) corrupt(path, "an unterminated string in the header");
    const std::string text = header.substr(p + 1, e - p - 1);
    p = e;
    return text;
  };
  for (skip_spaces(); p < header.size() && header[p] != '}'; skip_spaces()) {
    if (header[p] != '\'' && header[p] != '"') corrupt(path, "a header key that is not a string");
    const std::string key = quoted();
    skip_spaces();
    if (p >= header.size() || header[p] != ':') corrupt(path, "no ':' after the header key '" + key + "'");
    skip_spaces();
    std::string value;
    if (p < header.size() && (header[p] == '\'' || header[p] == '"')) {
      value = quoted();
      skip_spaces();
    } else {
      const std::size_t e = header.find_first_of(header[p] == '(' ? ")" : ",}", p);
      if (e == std::string::npos) corrupt(path, "an unterminated value in the header");
      value = header.substr(p, header[p] == '(' ? e - p + 1 : e - p);
      while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
      p = header[p] == '(' ? e : e - 1;
      skip_spaces();
    }
    if (key != "descr" && key != "fortran_order" && key != "shape")
      corrupt(path, "the header has a key '" + key + "' (expected descr, fortran_order and shape)");
    entries[key] = value;  // a key given twice counts with its last value, as in a Python dict
    if (p < header.size() && header[p] == '}') break;
    if (p >= header.size() || header[p] != ',') corrupt(path, "no ',' after the header entry '" + key + "'");
  }
  if (p >= header.size()) corrupt(path, "the header dict is not closed");
  return entries;
}

Shape parse_shape(const std::string &path, const std::string &text) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') corrupt(path, "no 'shape' tuple in the header");
  Shape shape;
  std::size_t p = 1;
  while (p < text.size() - 1) {
    while (p < text.size() - 1 && (text[p] == ' ' || text[p] == ',')) p++;
    if (p >= text.size() - 1) break;
    std::size_t e = p;
    std::int64_t v = 0;
    while (e < text.size() - 1 && text[e] >= '0' && text[e] <= '9') {
      if (v > (INT64_MAX - 9) / 10) corrupt(path, "shape " + text + " has an extent too large");
      v = v * 10 + (text[e] - '0');
      e++;
    }
    if (e == p) corrupt(path, "shape " + text + " is not a tuple of non-negative integers");
    shape.push_back(v);
    p = e;
    if (p < text.size() - 1 && text[p] == 'L') p++;  // Python 2 longs
  }
  if (shape.size() > 32) corrupt(path, "shape " + text + " has more than 32 dimensions");
  return shape;
}

DType parse_descr(const std::string &path, const std::string &descr) {
  if (descr.empty()) corrupt(path, "no 'descr' in the header");
  const char order = descr[0];
  const std::string kind = descr.substr(1);
  if ((order == '>' || order == '!') && kind != "u1")
    throw Failure(path + ": big-endian data (dtype '" + descr +
                  "') is not supported; save it little-endian, e.g. a.astype(a.dtype.newbyteorder('<'))");
  if (order != '<' && order != '|' && order != '=' && order != '>')
    throw Failure(path + ": unsupported dtype '" + descr + "'; expected float32, float64, uint8 or uint16");
  if (kind == "f4") return DType::f32;
  if (kind == "f8") return DType::f64;
  if (kind == "u1") return DType::u8;
  if (kind == "u2") return DType::u16;
  throw Failure(path + ": unsupported dtype '" + descr + "'; expected float32, float64, uint8 or uint16");
}

}  // namespace

bool is_npy(const unsigned char *head, std::size_t size) { return size >= 6 && std::memcmp(head, kMagic, 6) == 0; }

RawArray read_npy(const std::string &path) {
  InputFile in(path);
  return read_npy(in);
}

RawArray read_npy(InputFile &in) {
  const std::string &path = in.path();
  in.rewind();
  const std::int64_t file_size = in.size();
  if (file_size == 0) throw Failure(path + ": empty file (0 bytes)");
  unsigned char pre[12] = {};
  const std::size_t got = in.read(pre, 10);
  if (got < 6 || std::memcmp(pre, kMagic, 6) != 0) corrupt(path, "wrong magic (expected \\x93NUMPY)");
  if (got < 10) corrupt(path, "truncated header");
  const int major = pre[6];
  std::int64_t header_len = 0, prefix = 10;
  if (major == 1) {
    header_len = pre[8] | (pre[9] << 8);
  } else if (major == 2 || major == 3) {
    if (in.read(pre + 10, 2) < 2) corrupt(path, "truncated header");
    header_len = std::int64_t(pre[8]) | (std::int64_t(pre[9]) << 8) | (std::int64_t(pre[10]) << 16) |
                 (std::int64_t(pre[11]) << 24);
    prefix = 12;
  } else {
    corrupt(path, "format version " + std::to_string(major) + " (expected 1, 2 or 3)");
  }
  if (header_len > (1 << 20) || prefix + header_len > file_size)
    corrupt(path, "truncated header (declares " + std::to_string(header_len) + " bytes, file has " +
                      std::to_string(file_size) + ")");
  std::string header(static_cast<std::size_t>(header_len), '\0');
  in.read(header.data(), header.size());

  RawArray a;
  auto entries = header_entries(path, header);
  a.dtype = parse_descr(path, entries["descr"]);
  const std::string fortran = entries["fortran_order"];
  if (fortran == "True")
    throw Failure(path + ": Fortran-order data is not supported; save a C-order array, e.g. np.ascontiguousarray(a)");
  if (fortran != "False") corrupt(path, "no 'fortran_order' in the header");
  a.shape = parse_shape(path, entries["shape"]);

  const std::int64_t data_bytes = file_size - prefix - header_len;
  const std::int64_t count = element_count(a.shape, INT64_MAX / 8);
  const std::int64_t expected = count < 0 ? -1 : count * static_cast<std::int64_t>(size_of(a.dtype));
  if (expected < 0 || expected > data_bytes)
    throw Failure(path + ": truncated .npy: shape " + shape_string(a.shape) + " of " + name(a.dtype) + " needs " +
                  (expected < 0 ? std::string("more than 2^63") : std::to_string(expected)) +
                  " bytes of data, the file has " + std::to_string(data_bytes));
  if (expected < data_bytes)
    corrupt(path, std::to_string(data_bytes - expected) + " bytes beyond the " + shape_string(a.shape) + " " +
                      name(a.dtype) + " data");
  a.bytes.resize(static_cast<std::size_t>(expected));
  if (in.read(a.bytes.data(), a.bytes.size()) != a.bytes.size()) throw Failure(path + ": read error");
  return a;
}

void write_npy(const std::string &path, const RawArray &a) {
  OutputFile out(path);
  write_npy(out, a);
}

void write_npy(OutputFile &out, const RawArray &a) {
  const char *descr = a.dtype == DType::u8    ? "|u1"
                      : a.dtype == DType::u16 ? "<u2"
                      : a.dtype == DType::f32 ? "<f4"
                                              : "<f8";
  std::string dict =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape_string(a.shape) + ", }";
  const bool v2 = dict.size() + 11 > 65535;
  const std::size_t prefix = v2 ? 12 : 10;
  const std::size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;  // data aligned to 64 bytes
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string head(kMagic, 6);
  head.push_back(static_cast<char>(v2 ? 2 : 1));
  head.push_back(0);
  const std::size_t len = dict.size();
  head.push_back(static_cast<char>(len & 0xff));
  head.push_back(static_cast<char>((len >> 8) & 0xff));
  if (v2) {
    head.push_back(static_cast<char>((len >> 16) & 0xff));
    head.push_back(static_cast<char>((len >> 24) & 0xff));
  }
  out.write(head.data(), head.size());
  out.write(dict.data(), dict.size());
  out.write(a.bytes.data(), a.bytes.size());
  out.close();
}

}  // namespace hpipe::cli
