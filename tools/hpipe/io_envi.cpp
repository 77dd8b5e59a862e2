#include "io_envi.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

#include "errors.h"
#include "file.h"
#include "formats.h"

namespace hpipe::cli {

namespace {

std::string trim(const std::string &s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) b++;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) e--;
  return s.substr(b, e - b);
}

bool is_header_text(const std::string &path) {
  char head[4];
  try {
    InputFile f(path);
    return f.read(head, 4) == 4 && std::memcmp(head, "ENVI", 4) == 0;
  } catch (const Failure &) {
    return false;
  }
}

// "key = value" lines; a value in braces may run over several lines. Keys in lower case.
std::map<std::string, std::string> parse_header(const std::string &path) {
  InputFile f(path);
  if (f.size() > (1 << 24)) throw Failure(path + ": ENVI header of " + std::to_string(f.size()) + " bytes (corrupt?)");
  const std::vector<unsigned char> bytes = f.read_all();
  const std::string text(bytes.begin(), bytes.end());
  std::map<std::string, std::string> fields;
  std::size_t at = text.find('\n');
  while (at != std::string::npos && at < text.size()) {
    const std::size_t eq = text.find('=', at);
    const std::size_t line_end = text.find('\n', at + 1);
    if (eq == std::string::npos) break;
    if (line_end != std::string::npos && line_end < eq) {  // a line without '=': skip it
      at = line_end;
      continue;
    }
    const std::string key = lower_case(trim(text.substr(at, eq - at)));
    std::size_t v = eq + 1;
    while (v < text.size() && (text[v] == ' ' || text[v] == '\t')) v++;
    std::size_t end;
    if (v < text.size() && text[v] == '{') {
      end = text.find('}', v);
      if (end == std::string::npos)
        throw Failure(path + ": ENVI header: the value of '" + key + "' has no closing '}'");
      fields[key] = text.substr(v + 1, end - v - 1);
      end = text.find('\n', end);
    } else {
      end = text.find('\n', v);
      fields[key] = trim(text.substr(v, end == std::string::npos ? std::string::npos : end - v));
    }
    at = end;
  }
  return fields;
}

std::int64_t integer_field(const std::map<std::string, std::string> &h, const std::string &path, const std::string &key,
                           std::optional<std::int64_t> fallback, std::int64_t min) {
  const auto it = h.find(key);
  if (it == h.end()) {
    if (fallback) return *fallback;
    throw Failure(path + ": ENVI header lacks '" + key + "'");
  }
  char *end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || trim(end) != "" || v < min || v > (std::int64_t(1) << 40))
    throw Failure(path + ": ENVI header: '" + key + "' is '" + it->second +
                  "', expected an integer >= " + std::to_string(min));
  return v;
}

// The data file: the header's name without .hdr, or with a usual data extension.
std::string data_file_of(const std::string &header) {
  const std::string stem = header.substr(0, header.size() - 4);
  for (const char *ext : {"", ".img", ".raw", ".dat", ".bsq", ".bil", ".bip", ".bin"})
    if (exists(stem + ext) && !is_directory(stem + ext)) return stem + ext;
  throw Failure(header + ": no data file beside the ENVI header (looked for " + stem +
                " with no extension, .img, .raw, .dat, "
                ".bsq, .bil, .bip, .bin)");
}

struct EnviType {
  int code;
  std::size_t size;
  DType read_as;
  const char *name;
};

std::optional<EnviType> envi_type(std::int64_t code) {
  switch (code) {
    case 1: return EnviType{1, 1, DType::u8, "uint8"};
    case 2: return EnviType{2, 2, DType::f32, "int16"};
    case 4: return EnviType{4, 4, DType::f32, "float32"};
    case 5: return EnviType{5, 8, DType::f64, "float64"};
    case 12: return EnviType{12, 2, DType::u16, "uint16"};
    default: return std::nullopt;
  }
}

// The stored element at `p` (in `big_endian` order) into the element type it reads as.
void convert(const unsigned char *p, const EnviType &t, bool big_endian, unsigned char *out) {
  unsigned char v[8];
  for (std::size_t i = 0; i < t.size; i++) v[i] = p[big_endian ? t.size - 1 - i : i];  // to little-endian (this host)
  if (t.code == 2) {
    std::int16_t s;
    std::memcpy(&s, v, 2);
    const float f = s;
    std::memcpy(out, &f, 4);
  } else {
    std::memcpy(out, v, t.size);
  }
}

}  // namespace

std::string envi_header_of(const std::string &path) {
  const std::string l = lower_case(path);
  if (l.size() > 4 && l.substr(l.size() - 4) == ".hdr") return is_header_text(path) ? path : "";
  const std::size_t dot = path.rfind('.'), slash = path.rfind('/');
  std::vector<std::string> candidates = {path + ".hdr"};
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash))
    candidates.push_back(path.substr(0, dot) + ".hdr");
  for (const std::string &c : candidates)
    if (is_header_text(c)) return c;
  return "";
}

EnviImage read_envi(const std::string &header, const std::string &named_data) {
  const auto h = parse_header(header);
  const std::int64_t samples = integer_field(h, header, "samples", std::nullopt, 1);
  const std::int64_t lines = integer_field(h, header, "lines", std::nullopt, 1);
  const std::int64_t bands = integer_field(h, header, "bands", std::nullopt, 1);
  const std::int64_t offset = integer_field(h, header, "header offset", 0, 0);
  const std::int64_t code = integer_field(h, header, "data type", std::nullopt, 0);
  const std::int64_t order = integer_field(h, header, "byte order", 0, 0);
  if (order > 1)
    throw Failure(header + ": ENVI header: 'byte order' is " + std::to_string(order) + ", expected 0 or 1");
  const std::optional<EnviType> type = envi_type(code);
  if (!type)
    throw Failure(header + ": ENVI data type " + std::to_string(code) +
                  " is not supported (hpipe reads 1 uint8, 2 int16, 4 float32, 5 float64, 12 uint16)");
  const std::string interleave = lower_case(h.count("interleave") ? h.at("interleave") : "bsq");
  if (interleave != "bsq" && interleave != "bil" && interleave != "bip")
    throw Failure(header + ": ENVI interleave '" + interleave + "' is not bsq, bil or bip");
  if (h.count("file type") && lower_case(h.at("file type")).find("envi") == std::string::npos)
    throw Failure(header + ": ENVI file type '" + h.at("file type") + "' is not supported (ENVI Standard only)");

  EnviImage image;
  if (h.count("wavelength")) {
    std::string list = h.at("wavelength");
    std::replace(list.begin(), list.end(), '\n', ' ');
    const auto numbers = [&]() -> std::optional<std::vector<double>> {
      std::vector<double> out;
      const char *p = list.c_str();
      while (true) {
        char *end = nullptr;
        const double x = std::strtod(p, &end);
        if (end == p || !std::isfinite(x)) return std::nullopt;
        out.push_back(x);
        while (std::isspace(static_cast<unsigned char>(*end))) end++;
        if (*end == '\0') return out;
        if (*end != ',') return std::nullopt;
        p = end + 1;
      }
    }();
    if (!numbers || std::int64_t(numbers->size()) != bands)
      throw Failure(header + ": ENVI header: 'wavelength' should list " + std::to_string(bands) +
                    " numbers, one per band");
    const std::string units = lower_case(h.count("wavelength units") ? h.at("wavelength units") : "nanometers");
    const double to_nm = units.rfind("micro", 0) == 0 || units == "um"  ? 1000
                         : units.rfind("nano", 0) == 0 || units == "nm" ? 1
                                                                        : 0;
    if (to_nm == 0) throw Failure(header + ": ENVI wavelength units '" + units + "' are not nanometers or micrometers");
    for (double w : *numbers) image.wavelengths.push_back(w * to_nm);
  }

  const std::string data = named_data.empty() ? data_file_of(header) : named_data;
  image.data_file = data;
  InputFile in(data);
  const Shape shape{bands, lines, samples};
  const std::int64_t n = element_count(shape, INT64_MAX / 16);
  const std::int64_t bytes = check_declared_size(data,
                                                 "ENVI image " + std::to_string(bands) + " x " + std::to_string(lines) +
                                                     " x " + std::to_string(samples) + " (C x H x W) of " + type->name +
                                                     " after a header offset of " + std::to_string(offset),
                                                 n, std::int64_t(type->size), in.size(), false, offset);
  std::vector<unsigned char> stored(static_cast<std::size_t>(bytes));
  if (in.read(stored.data(), stored.size()) != stored.size()) throw Failure(data + ": file shrank while being read");

  RawArray &a = image.array;
  a.shape = shape;
  a.dtype = type->read_as;
  const std::size_t out_size = size_of(a.dtype);
  a.bytes.resize(static_cast<std::size_t>(n) * out_size);
  const bool big = order == 1;
  for (std::int64_t c = 0; c < bands; c++)
    for (std::int64_t y = 0; y < lines; y++)
      for (std::int64_t x = 0; x < samples; x++) {
        const std::int64_t at = interleave == "bsq"   ? (c * lines + y) * samples + x
                                : interleave == "bil" ? (y * bands + c) * samples + x
                                                      : (y * samples + x) * bands + c;
        convert(stored.data() + offset + at * std::int64_t(type->size), *type, big,
                a.bytes.data() + ((c * lines + y) * samples + x) * std::int64_t(out_size));
      }
  if (bands == 1) a.shape.erase(a.shape.begin());
  std::string upper = interleave;
  for (char &ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  image.detail = upper + ", " + type->name + (big ? " big-endian" : " little-endian");
  return image;
}

void write_envi(const Destination &header, const Destination &data, const RawArray &a,
                const std::vector<double> &wavelengths) {
  if (a.shape.size() < 2 || a.shape.size() > 3)
    throw UsageError(header.target + ": ENVI holds images (H, W) or band stacks (C, H, W), not shape " +
                     shape_string(a.shape));
  const std::int64_t bands = a.shape.size() == 3 ? a.shape[0] : 1;
  int code = 4;
  switch (a.dtype) {
    case DType::u8: code = 1; break;
    case DType::u16: code = 12; break;
    case DType::f32: code = 4; break;
    case DType::f64: code = 5; break;
  }
  std::string text = "ENVI\ndescription = {written by hpipe}\nsamples = " + std::to_string(a.shape.back()) +
                     "\nlines = " + std::to_string(a.shape[a.shape.size() - 2]) + "\nbands = " + std::to_string(bands) +
                     "\nheader offset = 0\nfile type = ENVI Standard\ndata type = " + std::to_string(code) +
                     "\ninterleave = bsq\nbyte order = 0\n";
  if (std::int64_t(wavelengths.size()) == bands) {
    text += "wavelength units = Nanometers\nwavelength = {";
    char buf[32];
    for (std::size_t i = 0; i < wavelengths.size(); i++) {
      std::snprintf(buf, sizeof buf, "%.10g", wavelengths[i]);
      text += (i ? ", " : "") + std::string(buf);
    }
    text += "}\n";
  }
  OutputFile header_file(header);
  header_file.write(text.data(), text.size());
  header_file.close();
  OutputFile data_file(data);
  data_file.write(a.bytes.data(), a.bytes.size());  // this host is little-endian, as byte order = 0 says
  data_file.close();
}

}  // namespace hpipe::cli
