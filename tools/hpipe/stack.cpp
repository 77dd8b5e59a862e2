#include "stack.h"

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <limits>
#include <memory>
#include <system_error>
#include <thread>
#include <type_traits>

#include "errors.h"
#include "file.h"
#include "hpipe/device.h"
#include "io_mat.h"
#include "io_npy.h"

namespace hpipe::cli {

namespace {

std::string lower(std::string s) {
  for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(const std::string &s, const std::string &tail) {
  return s.size() >= tail.size() && lower(s.substr(s.size() - tail.size())) == tail;
}

std::vector<std::string> folder_files(const std::string &dir) {
  std::unique_ptr<DIR, int (*)(DIR *)> d(opendir(dir.c_str()), &closedir);
  if (!d) throw Failure(dir + ": cannot read the folder");
  std::vector<std::string> files;
  while (const dirent *e = readdir(d.get())) {
    const std::string n = e->d_name;
    if (n.empty() || n[0] == '.' || !(ends_with(n, ".png") || ends_with(n, ".npy"))) continue;
    files.push_back(dir + (dir.back() == '/' ? "" : "/") + n);
  }
  if (files.empty()) throw Failure(dir + ": the folder has no .png or .npy files");
  std::sort(files.begin(), files.end(), natural_less);
  return files;
}

std::vector<std::string> list_files(const std::string &list) {
  std::ifstream in(list);
  if (!in) throw Failure(list + ": cannot open the list file");
  const std::size_t slash = list.rfind('/');
  const std::string base = slash == std::string::npos ? "" : list.substr(0, slash + 1);
  std::vector<std::string> files;
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    std::size_t b = 0;
    while (b < line.size() && std::isspace(static_cast<unsigned char>(line[b]))) b++;
    line = line.substr(b);
    if (line.empty() || line[0] == '#') continue;
    files.push_back(line[0] == '/' ? line : base + line);
  }
  if (files.empty()) throw Failure(list + ": the list names no files");
  return files;
}

std::vector<std::string> glob_files(const std::string &pattern) {
  glob_t g{};
  const int rc = glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<std::string> files;
  if (rc == 0)
    for (std::size_t i = 0; i < g.gl_pathc; i++)
      if (!is_directory(g.gl_pathv[i])) files.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  if (files.empty()) throw Failure(pattern + ": no such file, and no files match it as a pattern");
  std::sort(files.begin(), files.end(), natural_less);
  return files;
}

template <class Stored, class T>
void decode_into(const RawArray &a, const Decoder &decode, T *out) {
  const std::int64_t n = a.size();
  if (n == 0) return;  // an empty array's bytes.data() may be null, and memcpy takes no null
  const unsigned char *p = a.bytes.data();
  if (std::is_same_v<Stored, T> && decode.offset == 0 && decode.factor == 1 && decode.scale == 1) {
    std::memcpy(out, p, static_cast<std::size_t>(n) * sizeof(T));  // the values as they are
    return;
  }
  for (std::int64_t k = 0; k < n; k++) {
    Stored v;
    std::memcpy(&v, p + k * sizeof(Stored), sizeof(Stored));
    out[k] = static_cast<T>(decode(static_cast<double>(v)));
  }
}

std::string plane_size(const Shape &s) {
  return std::to_string(s[s.size() - 2]) + " x " + std::to_string(s[s.size() - 1]);
}

// The index of the one integer conversion in a printf pattern, or npos when there is no '%'.
std::size_t check_pattern(const std::string &p) {
  std::size_t found = std::string::npos;
  for (std::size_t i = 0; i < p.size(); i++) {
    if (p[i] != '%') continue;
    if (i + 1 < p.size() && p[i + 1] == '%') {
      i++;
      continue;
    }
    std::size_t j = i + 1;
    while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j]))) j++;
    if (j >= p.size() || p[j] != 'd' || j - i > 4 || found != std::string::npos)
      throw UsageError("output pattern '" + p + "': expected exactly one integer conversion such as %d or %02d");
    found = i;
    i = j;
  }
  return found;
}

std::string format_pattern(const std::string &p, std::int64_t index) {
  char buf[4096];
  const int n = std::snprintf(buf, sizeof buf, p.c_str(), static_cast<int>(index));  // NOLINT: checked by check_pattern
  if (n < 0 || n >= int(sizeof buf)) throw UsageError("output pattern '" + p + "': the name is too long");
  return buf;
}

}  // namespace

Decoder::Decoder(const Source &s, const ReadOptions &options) {
  const bool integer = s.array.dtype == DType::u8 || s.array.dtype == DType::u16;
  if (!integer || options.raw) return;
  const double top = s.array.dtype == DType::u8 ? 255.0 : 65535.0;
  const ValueRange r = s.range.value_or(ValueRange{});
  if (!std::isfinite(r.hi - r.lo)) scale = 2;
  offset = r.lo / scale;
  factor = (r.hi / scale - r.lo / scale) / top;
}

bool natural_less(const std::string &a, const std::string &b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])), db = std::isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ie++;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) je++;
      std::size_t is = i, js = j;  // skip leading zeros
      while (is + 1 < ie && a[is] == '0') is++;
      while (js + 1 < je && b[js] == '0') js++;
      const std::string na = a.substr(is, ie - is), nb = b.substr(js, je - js);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      if (ie - i != je - j) return ie - i < je - j;
      i = ie, j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      i++, j++;
    }
  }
  return a.size() - i < b.size() - j;
}

std::vector<std::string> expand_inputs(const std::vector<std::string> &specs) {
  std::vector<std::string> files;
  for (const std::string &s : specs) {
    std::vector<std::string> more;
    if (s.size() > 1 && s[0] == '@') {
      more = list_files(s.substr(1));
    } else if (is_directory(s)) {
      more = folder_files(s);
    } else if (exists(s) || s.find_first_of("*?[") == std::string::npos) {
      more = {s};
    } else {
      more = glob_files(s);
    }
    files.insert(files.end(), more.begin(), more.end());
  }
  return files;
}

// What a file's extension says it is, for the error when its bytes are no format hpipe knows (a
// MATLAB v4 file was "not a PNG file"); nullptr for other names.
const char *format_named_by(const std::string &path) {
  const std::string l = lower_case(path);
  if (ends_with(l, ".mat")) return "a MATLAB v5 or v7.3 file (v4 files are not read: save with -v7 or -v7.3)";
  if (ends_with(l, ".h5") || ends_with(l, ".hdf5") || ends_with(l, ".he5")) return "an HDF5 file";
  if (ends_with(l, ".tif") || ends_with(l, ".tiff")) return "a TIFF file";
  return nullptr;
}

// A pipe's bytes in a temporary file for the readers that open files by name (matio, libhdf5,
// libtiff); errors name the pipe. The copy is an output never committed: removed when done or
// interrupted, and one that a killed hpipe left is removed by the next copy made in that folder.
std::optional<Loaded> read_other_format_of_pipe(InputFile &in, const std::string &selected) {
  static int copies = 0;  // a process may read several pipes
  const char *tmpdir = std::getenv("TMPDIR");
  const std::string dir = tmpdir && *tmpdir ? tmpdir : "/tmp";
  const OutputSet set({dir + "/hpipe-pipe-" + std::to_string(copies++)}, {}, true);
  const std::string temp = set.destination(0).path;
  try {
    // Only its owner may read it: a pipe's contents may be private, $TMPDIR shared.
    const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) throw Failure(in.path() + ": cannot copy the pipe to " + dir + ": " + std::strerror(errno));
    close(fd);
    const std::vector<unsigned char> bytes = in.read_all();
    OutputFile copy(temp, in.path() + ": its copy in " + dir);
    copy.write(bytes.data(), bytes.size());
    copy.close();
    std::optional<Loaded> l = read_other_format(selected.empty() ? temp : temp + ":" + selected);
    if (l) l->files = {in.path()};
    return l;
  } catch (const Failure &e) {
    std::string message = e.what();
    for (std::size_t at; (at = message.find(temp)) != std::string::npos;) message.replace(at, temp.size(), in.path());
    throw Failure(message);
  }
}

Source read_source(const std::string &path, const ReadOptions &options) {
  Source s;
  s.path = path;
  bool band_first = false;
  // "file.mat:var" names a variable of a file; a pipe (or device) is read into memory once.
  const Selector selected = split_selector(path);
  std::optional<InputFile> in;
  unsigned char head[8] = {};
  std::size_t got = 0;
  if (exists(selected.file) && !is_directory(selected.file)) {
    in.emplace(selected.file);
    got = in->read(head, sizeof head);
    in->rewind();
  }
  const bool whole_file = selected.name.empty();
  const bool npy = whole_file && is_npy(head, got), png_magic = whole_file && is_png(head, got);
  const bool pipe = in && in->in_memory();
  std::optional<Loaded> other;
  if (!npy && !png_magic && !pipe)
    other = read_other_format(path);  // before the name: a cube.npy beside a cube.hdr is ENVI data
  else if (!npy && !png_magic && got > 0)
    other = read_other_format_of_pipe(*in, selected.name);
  if (other) {
    s.format = other->format;
    s.array = std::move(other->array);
    s.detail = std::move(other->detail);
    s.wavelengths = std::move(other->wavelengths);
    band_first = other->band_first;
    s.files = std::move(other->files);
  } else if (!in) {
    InputFile missing(path);  // says why it cannot be opened
  } else if (npy || (ends_with(path, ".npy") && !png_magic)) {
    s.array = read_npy(*in);  // a .npy name that is not one: says what is wrong with it
  } else if (pipe && !png_magic && got > 0) {
    throw Failure(path +
                  ": cannot tell the format of a pipe from its first bytes: from a pipe or stdin hpipe "
                  "reads .npy, PNG, MATLAB .mat, HDF5 and TIFF (ENVI needs its .hdr file)");
  } else if (const char *named = format_named_by(path); named && !png_magic) {
    throw Failure(path + ": not " + named + ": its bytes are of no format hpipe reads");
  } else {
    PngImage png = read_png(*in);  // reports a wrong magic for anything else
    s.format = Format::png;
    s.array = std::move(png.array);
    s.range = png.range;
    band_first = true;
  }
  if (s.files.empty()) s.files = {path};
  s.stored_shape = s.array.shape;
  if (!band_first && (s.array.shape.size() == 3 || s.array.shape.size() == 4)) {
    s.layout = options.layout.value_or(default_layout(s.format));
    if (*s.layout == Layout::hwc) s.array = hwc_to_chw(s.array);
  }
  return s;
}

std::vector<Source> read_sources(const std::vector<std::string> &files, const ReadOptions &options, const Tick &tick) {
  if (files.empty()) throw UsageError("no input files given");
  std::vector<Source> sources;
  for (std::size_t i = 0; i < files.size(); i++) {
    sources.push_back(read_source(files[i], options));
    if (tick) tick(i + 1, files.size());
  }
  return sources;
}

bool any_float64(const std::vector<Source> &sources) {
  return std::any_of(sources.begin(), sources.end(), [](const Source &s) { return s.array.dtype == DType::f64; });
}

template <class T>
Stack<T> to_stack(std::vector<Source> &&sources, const ReadOptions &options) {
  Stack<T> stack;
  Shape first;
  std::int64_t bands = 0;
  for (std::size_t i = 0; i < sources.size(); i++) {
    Source &s = sources[i];
    const Shape &sh = s.array.shape;
    stack.files.push_back(s.path);
    if (sources.size() == 1) {
      stack.shape = sh;
    } else {
      if (sh.size() < 2 || sh.size() > 3)
        throw Failure(s.path + ": shape " + shape_string(sh) +
                      " cannot join a stack of images: expected (H, W) or (bands, H, W)");
      if (i == 0) first = sh;
      if (sh[sh.size() - 2] != first[first.size() - 2] || sh.back() != first.back())
        throw Failure(s.path + ": image size " + plane_size(sh) + " differs from " + plane_size(first) + " of " +
                      sources[0].path + " (mismatched band sizes)");
      bands += sh.size() == 3 ? sh[0] : 1;
      stack.shape = {bands, first[first.size() - 2], first.back()};
    }
    const Decoder decode(s, options);
    const std::size_t at = stack.data.size();
    stack.data.resize(at + static_cast<std::size_t>(s.array.size()));
    switch (s.array.dtype) {
      case DType::u8: decode_into<std::uint8_t>(s.array, decode, stack.data.data() + at); break;
      case DType::u16: decode_into<std::uint16_t>(s.array, decode, stack.data.data() + at); break;
      case DType::f32: decode_into<float>(s.array, decode, stack.data.data() + at); break;
      case DType::f64: decode_into<double>(s.array, decode, stack.data.data() + at); break;
    }
    stack.bytes_read += static_cast<std::int64_t>(s.array.bytes.size());
    s.array.bytes = {};
  }
  return stack;
}

Scale parse_scale(const std::string &text) {
  Scale s;
  if (text == "none") return s;
  if (text == "auto") {
    s.mode = Scale::automatic;
    return s;
  }
  const std::size_t comma = text.find(',');
  char *end = nullptr;
  if (comma != std::string::npos) {
    const std::string a = text.substr(0, comma), b = text.substr(comma + 1);
    s.range.lo = std::strtod(a.c_str(), &end);
    const bool ok_a = !a.empty() && *end == '\0';
    s.range.hi = std::strtod(b.c_str(), &end);
    if (ok_a && !b.empty() && *end == '\0' && std::isfinite(s.range.lo) && std::isfinite(s.range.hi) &&
        s.range.lo < s.range.hi) {
      s.mode = Scale::fixed;
      return s;
    }
  }
  throw UsageError("--scale: expected auto, none or MIN,MAX with MIN < MAX, got '" + text + "'");
}

std::optional<DType> parse_type(const std::string &text) {
  if (text.empty()) return std::nullopt;
  if (text == "u8") return DType::u8;
  if (text == "u16") return DType::u16;
  if (text == "f32") return DType::f32;
  if (text == "f64") return DType::f64;
  throw UsageError("--type: expected u8, u16, f32 or f64, got '" + text + "'");
}

OutputPlan plan_output(const std::string &output, const Shape &shape) {
  OutputPlan plan;
  plan.format = output_format(output);
  plan.pattern = check_pattern(output) != std::string::npos;
  plan.plane_shape = shape;
  const bool png = plan.format == Format::png;
  if (png || plan.format == Format::npy) {
    std::int64_t planes = 1;
    if (plan.pattern || png) {
      if (shape.size() < 2)
        throw UsageError(output + ": the result has shape " + shape_string(shape) +
                         ", not images; write it to a .npy file");
      plan.plane_shape = {shape[shape.size() - 2], shape.back()};
      // Checked before the planes are counted: empty planes put no bound on their number (a
      // 128-byte .npy of shape (10^9, 0, 0) would name 10^9 files).
      if (element_count(plan.plane_shape) == 0)
        throw UsageError(output + ": the result has shape " + shape_string(shape) +
                         ", its images are empty; write it to a .npy file");
      if (png && (plan.plane_shape[0] > kPngMaxSide || plan.plane_shape[1] > kPngMaxSide))
        throw UsageError(output + ": images of " + plane_size(shape) + " pixels are larger than a PNG hpipe writes (" +
                         std::to_string(kPngMaxSide) + " per side at most); write a .npy file");
      for (std::size_t d = 0; d + 2 < shape.size(); d++) planes *= shape[d];
      if (!plan.pattern && planes != 1)
        throw UsageError(output + ": the result has " + std::to_string(planes) + " planes (shape " +
                         shape_string(shape) + "); give a pattern such as out/band_%02d.png, or a .npy file");
    }
    for (std::int64_t p = 0; p < planes; p++) plan.files.push_back(plan.pattern ? format_pattern(output, p) : output);
    return plan;
  }
  if (plan.pattern)
    throw UsageError(output + ": a " + name(plan.format) +
                     " file holds the whole result; give a name without a % pattern");
  plan.files = output_files(plan.format, output);
  return plan;
}

void check_output_name(const std::string &output, const std::vector<std::string> &inputs, bool force) {
  const Format format = output_format(output);
  if (const std::string variable = split_selector(output).name; format == Format::mat && !variable.empty())
    check_mat_variable_name(output, variable);
  if (check_pattern(output) == std::string::npos)
    OutputSet::check(format == Format::png || format == Format::npy ? std::vector<std::string>{output}
                                                                    : output_files(format, output),
                     inputs, force);
  else if (format != Format::png && format != Format::npy)
    throw UsageError(output + ": a " + name(format) + " file holds the whole result; give a name without a % pattern");
}

template <class T>
WriteReport write_stack(const std::string &output, const Shape &shape, const hpipe::AlignedVector<T> &data,
                        const WriteOptions &options, DType default_type, const std::vector<std::string> &inputs,
                        OutputSet &outputs, const Tick &tick) {
  const OutputPlan plan = plan_output(output, shape);
  const bool png = plan.format == Format::png, pattern = plan.pattern;
  const bool whole_file = !png && plan.format != Format::npy;
  WriteReport report;
  const bool default_int = default_type == DType::u8 || default_type == DType::u16;
  report.type = options.type.value_or(png && !default_int ? DType::u16 : default_type);
  const bool integer = report.type == DType::u8 || report.type == DType::u16;
  if (png && !integer)
    throw UsageError("--type " + std::string(name(report.type)) + ": PNG holds u8 or u16; write a .npy for floats");
  const std::vector<std::string> &targets = plan.files;
  const std::int64_t planes = whole_file ? 1 : static_cast<std::int64_t>(targets.size());
  const std::size_t first = outputs.add(targets, inputs);

  // The value range mapped onto the type's full range (integers) or onto [0, 1] (floats).
  const double top = report.type == DType::u8 ? 255.0 : report.type == DType::u16 ? 65535.0 : 1.0;
  double lo = 0, span = integer && options.raw ? top : 1, halve = 1;
  if (options.scale.mode != Scale::none) {
    ValueRange r = options.scale.range;
    if (options.scale.mode == Scale::automatic) {
      r = {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
      for (T v : data)
        if (std::isfinite(v)) r.lo = std::min<double>(r.lo, v), r.hi = std::max<double>(r.hi, v);
      if (!(r.lo <= r.hi)) r = {0, 1};
      if (r.lo == r.hi) r.hi = r.lo + 1;
    }
    report.range = r;
    // Halved where max - min overflows (a range wider than the largest double).
    if (!std::isfinite(r.hi - r.lo)) halve = 0.5;
    lo = r.lo * halve;
    span = r.hi * halve - r.lo * halve;
  }
  const std::int64_t per_plane = element_count(plan.plane_shape);
  // Plane p in the output's type; adds its values that do not fit to `clipped`.
  const auto convert = [&](std::int64_t p, std::int64_t &clipped) {
    RawArray a;
    a.shape = plan.plane_shape;
    a.dtype = report.type;
    a.bytes.resize(static_cast<std::size_t>(per_plane) * size_of(a.dtype));
    const T *src = data.data() + p * per_plane;
    const bool as_is = options.scale.mode == Scale::none && size_of(a.dtype) == sizeof(T) && !integer;
    if (as_is && per_plane > 0) std::memcpy(a.bytes.data(), src, a.bytes.size());  // floats of the work's own type
    for (std::int64_t i = 0; i < per_plane && !as_is; i++) {
      const double v =
          options.scale.mode == Scale::none && !integer ? double(src[i]) : (src[i] * halve - lo) / span * top;
      unsigned char *dst = a.bytes.data() + static_cast<std::size_t>(i) * size_of(a.dtype);
      if (integer) {
        const double q = std::nearbyint(v);
        const double c = std::isnan(q) ? 0 : std::clamp(q, 0.0, top);
        clipped += !(q == c);
        if (a.dtype == DType::u8) {
          *dst = static_cast<unsigned char>(c);
        } else {
          const auto u = static_cast<std::uint16_t>(c);
          std::memcpy(dst, &u, 2);
        }
      } else if (a.dtype == DType::f32) {
        const auto f = static_cast<float>(v);
        clipped += std::isfinite(v) && !std::isfinite(f);  // past float's range: +-inf
        std::memcpy(dst, &f, 4);
      } else {
        std::memcpy(dst, &v, 8);
      }
    }
    return a;
  };
  if (png) {
    // PNG planes are converted and deflated on hpipe's worker count of threads, a round of planes at
    // a time, in memory (most of a stack's writing time: 28 planes of 256 x 256, 200 of 208 ms of
    // `hpipe cassi pinv` on one thread); the files are written here, in order, so that no thread but
    // this one touches the file system while a stop signal may remove the temporaries. A plane in
    // flight holds its converted pixels and its file's bytes: rounds stay within kPngBytesInFlight.
    constexpr std::int64_t kPngBytesInFlight = std::int64_t(128) << 20;
    const std::int64_t plane_bytes = std::max<std::int64_t>(1, per_plane * std::int64_t(size_of(report.type)));
    const std::int64_t round =
        std::clamp<std::int64_t>(kPngBytesInFlight / (2 * plane_bytes), 1, std::max(1, hpipe::num_threads()));
    for (std::int64_t first_plane = 0; first_plane < planes; first_plane += round) {
      const std::int64_t n = std::min(round, planes - first_plane);
      std::vector<std::vector<unsigned char>> encoded(static_cast<std::size_t>(n));
      std::vector<std::int64_t> clipped(static_cast<std::size_t>(n), 0);
      std::vector<std::int64_t> sizes(static_cast<std::size_t>(n), 0);
      std::vector<std::exception_ptr> failures(static_cast<std::size_t>(n));
      const auto encode = [&](std::int64_t k) {
        const std::int64_t p = first_plane + k;
        try {
          const RawArray a = convert(p, clipped[k]);
          sizes[k] = static_cast<std::int64_t>(a.bytes.size());
          encoded[k] = encode_png(outputs.destination(first + std::size_t(p)).target, a, report.range);
        } catch (...) {
          failures[k] = std::current_exception();
        }
      };
      std::vector<std::thread> helpers;
      helpers.reserve(static_cast<std::size_t>(n - 1));
      {
        const StopSignalsHeld held;  // the helpers start with them held, for good
        for (std::int64_t k = 1; k < n; k++) {
          try {
            helpers.emplace_back(encode, k);
          } catch (...) {  // no thread to be had (std::system_error, std::bad_alloc): this one does it
            encode(k);
          }
        }
      }
      encode(0);
      for (std::thread &t : helpers) t.join();
      for (std::int64_t k = 0; k < n; k++) {
        if (failures[k]) std::rethrow_exception(failures[k]);
        OutputFile file(outputs.destination(first + std::size_t(first_plane + k)));
        file.write(encoded[k].data(), encoded[k].size());
        file.close();
        report.clipped += clipped[k];
        report.bytes_written += sizes[k];
        if (tick) tick(first_plane + k + 1, planes);
      }
    }
  } else {
    for (std::int64_t p = 0; p < planes; p++) {
      RawArray a = convert(p, report.clipped);
      if (!pattern) a.shape = shape;
      if (whole_file) {
        std::vector<Destination> files;
        for (std::size_t t = 0; t < targets.size(); t++) files.push_back(outputs.destination(first + t));
        write_other_format(plan.format, output, files, a, options.file);
      } else {
        OutputFile file(outputs.destination(first + std::size_t(p)));
        write_npy(file, options.file.layout == Layout::hwc && !pattern ? chw_to_hwc(a) : a);
      }
      report.bytes_written += static_cast<std::int64_t>(a.bytes.size());
      if (tick) tick(p + 1, planes);
    }
  }
  report.files = targets;
  return report;
}

template Stack<float> to_stack<float>(std::vector<Source> &&, const ReadOptions &);
template Stack<double> to_stack<double>(std::vector<Source> &&, const ReadOptions &);
template WriteReport write_stack<float>(const std::string &, const Shape &, const hpipe::AlignedVector<float> &,
                                        const WriteOptions &, DType, const std::vector<std::string> &, OutputSet &,
                                        const Tick &);
template WriteReport write_stack<double>(const std::string &, const Shape &, const hpipe::AlignedVector<double> &,
                                         const WriteOptions &, DType, const std::vector<std::string> &, OutputSet &,
                                         const Tick &);

}  // namespace hpipe::cli
