#include "cli.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <limits>
#include <new>
#include <sstream>

#include "hpipe/error.h"
#include "tools/json_quote.h"

namespace hpipe::cli {

namespace {

const std::vector<Option> kCommon = {
    {"--device", nullptr, "cpu|cuda|auto", "where kernels run (default auto: CUDA when a GPU is usable)"},
    {"--threads", nullptr, "N", "CPU worker threads, for kernels and PNG encoding (default: all cores)"},
    {"--quiet", "-q", nullptr, "print nothing but errors"},
    {"--verbose", "-v", nullptr, "say what is read, computed and written, with times (on stderr)"},
    {"--json", nullptr, nullptr, "print a machine-readable summary on stdout (shapes, times, bytes)"},
    {"--help", "-h", nullptr, "show this help"},
};
const std::vector<Option> kReadOptions = {
    {"--raw", nullptr, nullptr, "keep integer values (0..255, 0..65535) instead of mapping them to [0, 1]"},
    {"--layout", nullptr, "hwc|chw",
     "how 3-D/4-D arrays in .mat/.h5/.npy inputs are stored (default: .mat, .h5 hwc; .npy chw)"},
};
const std::vector<Option> kWriteOptions = {
    {"--output", "-o", "OUT", "a .npy file, a .png, or a pattern with one %d per band (out/band_%02d.png)"},
    {"--type", nullptr, "u8|u16|f32|f64",
     "output element type (PNG: u8 or u16, default u16; others: the work's f32 or f64, convert: the input's)"},
    {"--scale", nullptr, "auto|none|MIN,MAX",
     "map [MIN, MAX] (auto: the data's range) to the type's full range; default none: [0, 1] is full range"},
    {"--force", nullptr, nullptr, "overwrite existing outputs (never an input)"},
    {"--output-layout", nullptr, "hwc|chw",
     "how a .mat/.h5/.npy output stores a cube (default: .mat, .h5 hwc; .npy chw)"},
    {"--mat-version", nullptr, "5|7.3", "MATLAB file version of a .mat output (default 5; 7.3 is HDF5 inside)"},
};

const std::vector<Option> kComputeOptions = {
    {"--precision", nullptr, "auto|f32|f64",
     "the element type computed in (default auto: float64 when any input is, the mask too: 2-3x slower)"},
};

std::vector<const Option *> allowed(const Command &c) {
  std::vector<const Option *> all;
  for (const Option &o : c.options) all.push_back(&o);
  if (c.groups & kReads)
    for (const Option &o : kReadOptions) all.push_back(&o);
  if (c.groups & kWrites)
    for (const Option &o : kWriteOptions) all.push_back(&o);
  if (c.groups & kComputes)
    for (const Option &o : kComputeOptions) all.push_back(&o);
  for (const Option &o : kCommon) all.push_back(&o);
  return all;
}

// A number for text lines: 6 digits (the --json summary has them all).
std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// A JSON number that reads back as v (the shortest of 15 or 17 digits: 6 made a maximum of
// 123456.789 read 123457, past every value); null for NaN and infinities, which JSON lacks.
std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  if (std::strtod(buf, nullptr) != v) std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void print_options(std::ostream &out, const char *title, const std::vector<Option> &options) {
  if (options.empty()) return;
  out << "\n" << title << ":\n";
  for (const Option &o : options) {
    std::string left = std::string("  ") + (o.shorthand ? std::string(o.shorthand) + ", " : "    ") + o.name;
    if (o.value) left += std::string(" ") + o.value;
    out << left;
    out << (left.size() < 32 ? std::string(32 - left.size(), ' ') : "\n" + std::string(32, ' ')) << o.help << "\n";
  }
}

void print_help(std::ostream &out, const Command &c) {
  out << "usage: hpipe " << c.name << " " << c.arguments << " [options]\n\n" << c.summary << "\n";
  if (*c.details) out << "\n" << c.details << "\n";
  print_options(out, "options", c.options);
  if (c.groups & kReads) print_options(out, "input", kReadOptions);
  if (c.groups & kWrites) print_options(out, "output", kWriteOptions);
  if (c.groups & kComputes) print_options(out, "computation", kComputeOptions);
  print_options(out, "common", kCommon);
  out << "\nexample:\n  " << c.example << "\n";
}

void print_overview(std::ostream &out) {
  out << "usage: hpipe COMMAND [options]    (hpipe COMMAND --help for each)\n\n"
         "Process image stacks (PNG per band, .npy arrays) and spectral cubes (MATLAB .mat, HDF5, TIFF, ENVI)\n"
         "with hpipe's kernels.\n\ncommands:\n";
  for (const Command &c : commands()) {
    const std::string name = std::string("  ") + c.name;
    out << name << std::string(name.size() < 14 ? 14 - name.size() : 1, ' ') << c.summary << "\n";
  }
  out << "\nA STACK is files in band order, a quoted glob ('band_*.png', sorted naturally), a folder, or "
         "@list.txt;\nfile.mat:var and file.h5:/path pick a MATLAB variable or an HDF5 dataset.\n"
         "Exit status: 0 done, 1 failed, 2 bad usage.\n";
}

std::string format_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ms < 10 ? "%.2f ms" : "%.0f ms", ms);
  return buf;
}

}  // namespace

// ---- Json ----

Json &Json::raw(const std::string &key, const std::string &json) {
  for (auto &f : fields_)
    if (f.first == key) {
      f.second = json;
      return *this;
    }
  fields_.emplace_back(key, json);
  return *this;
}
Json &Json::set(const std::string &key, const std::string &value) { return raw(key, tools::json_quote(value)); }
Json &Json::set(const std::string &key, double value) { return raw(key, number(value)); }
Json &Json::set(const std::string &key, std::int64_t value) { return raw(key, std::to_string(value)); }
Json &Json::set(const std::string &key, bool value) { return raw(key, value ? "true" : "false"); }
Json &Json::set(const std::string &key, const Shape &shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); i++) s += (i ? ", " : "") + std::to_string(shape[i]);
  return raw(key, s + "]");
}
Json &Json::set(const std::string &key, const Json &object) { return raw(key, object.str()); }
Json &Json::set(const std::string &key, const std::vector<Json> &objects) {
  std::string s = "[";
  for (std::size_t i = 0; i < objects.size(); i++) s += (i ? ", " : "") + objects[i].str();
  return raw(key, s + "]");
}
Json &Json::set(const std::string &key, const std::vector<std::string> &strings) {
  std::string s = "[";
  for (std::size_t i = 0; i < strings.size(); i++) s += (i ? ", " : "") + tools::json_quote(strings[i]);
  return raw(key, s + "]");
}
Json &Json::set(const std::string &key, const std::vector<double> &numbers) {
  std::string s = "[";
  for (std::size_t i = 0; i < numbers.size(); i++) s += (i ? ", " : "") + number(numbers[i]);
  return raw(key, s + "]");
}
std::string Json::str() const {
  std::string s = "{";
  for (std::size_t i = 0; i < fields_.size(); i++)
    s += (i ? ", " : "") + tools::json_quote(fields_[i].first) + ": " + fields_[i].second;
  return s + "}";
}

// ---- Progress ----

Progress::Progress(bool enabled, std::string label)
    : enabled_(enabled && isatty(STDERR_FILENO)),
      label_(std::move(label)),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() {
  if (drawn_) std::fprintf(stderr, "\r\033[K");
}

void Progress::operator()(std::size_t done, std::size_t total) {
  if (!enabled_ || total < 2) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ < std::chrono::milliseconds(300) || (now - last_ < std::chrono::milliseconds(50) && done < total))
    return;
  last_ = now;
  const int width = 30, filled = static_cast<int>(width * done / total);
  std::fprintf(stderr, "\r%s [%s%s] %zu/%zu", label_.c_str(), std::string(filled, '#').c_str(),
               std::string(width - filled, ' ').c_str(), done, total);
  std::fflush(stderr);
  drawn_ = true;
}

// ---- Context ----

Context::Context(const Command &c, const std::vector<std::string> &args) : command(c) {
  const std::vector<const Option *> known = allowed(c);
  auto find = [&](const std::string &name) -> const Option * {
    for (const Option *o : known)
      if (name == o->name || (o->shorthand && name == o->shorthand)) return o;
    return nullptr;
  };
  for (std::size_t i = 0; i < args.size(); i++) {
    const std::string &a = args[i];
    if (a == "--") {
      positional.insert(positional.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (a.size() < 2 || a[0] != '-') {
      positional.push_back(a);
      continue;
    }
    const std::size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const Option *o = find(name);
    if (!o)
      throw UsageError("unknown option " + name + " for 'hpipe " + c.name + "' (see hpipe " + c.name + " --help)");
    std::string v;
    if (!o->value) {
      if (eq != std::string::npos) throw UsageError(std::string(o->name) + " takes no value");
    } else if (eq != std::string::npos) {
      v = a.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      v = args[++i];
    } else {
      throw UsageError(std::string(o->name) + ": expected " + o->value);
    }
    // An empty value (--type=, --preview '') was taken as the option's default, or as a path.
    if (o->value && v.empty()) throw UsageError(std::string(o->name) + ": expected " + o->value + ", got ''");
    values_[o->name] = v;
    given_.emplace_back(o, v);
  }
  quiet = has("--quiet");
  json = has("--json");
  verbose = has("--verbose") ? 1 : 0;
  if (const auto d = value("--device")) {
    if (*d == "cpu")
      options.device = Device::cpu;
    else if (*d == "cuda")
      options.device = Device::cuda;
    else if (*d == "auto")
      options.device = Device::automatic;
    else
      throw UsageError("--device: expected cpu, cuda or auto, got '" + *d + "'");
  }
  if (const auto p = value("--precision")) {
    if (*p == "f32")
      precision_f64 = false;
    else if (*p == "f64")
      precision_f64 = true;
    else if (*p != "auto")
      throw UsageError("--precision: expected auto, f32 or f64, got '" + *p + "'");
  }
  read.raw = has("--raw");
  read.layout = parse_layout(value("--layout").value_or(""), "--layout");
  write.file.layout = parse_layout(value("--output-layout").value_or(""), "--output-layout");
  if (const auto v = value("--mat-version")) {
    if (*v != "5" && *v != "7.3") throw UsageError("--mat-version: expected 5 or 7.3, got '" + *v + "'");
    write.file.mat73 = *v == "7.3";
  }
  write.raw = read.raw;
  write.force = has("--force");
  if (const auto t = value("--type")) write.type = parse_type(*t);
  if (const auto s = value("--scale")) write.scale = parse_scale(*s);
  if (const auto o = value("--output")) output = *o;
}

void Context::report_precision(bool f64, bool float64_input) {
  const char *why = precision_f64 ? "--precision" : float64_input ? "a float64 input" : "float32 inputs";
  summary.set("precision", f64 ? "f64" : "f32").set("precision_from", why);
  note(std::string("computing in ") + (f64 ? "float64" : "float32") + " (" + why + ")" +
       (f64 && !precision_f64 ? "; --precision f32 computes in float32, 2-3x faster" : ""));
}

bool Context::has(const char *option) const { return values_.count(option) != 0; }

std::optional<std::string> Context::value(const char *option) const {
  const auto it = values_.find(option);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Context::required(const char *option) const {
  const auto v = value(option);
  if (!v || v->empty()) throw UsageError(std::string("hpipe ") + command.name + ": " + option + " is required");
  return *v;
}

std::int64_t Context::integer(const char *option, std::int64_t fallback, std::int64_t min, std::int64_t max) const {
  const auto v = value(option);
  if (!v) return fallback;
  char *end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v->c_str(), &end, 10);
  // Digits with an optional minus sign only (strtoll also skips white space and takes a '+').
  const bool plain = !v->empty() && (std::isdigit(static_cast<unsigned char>((*v)[0])) || (*v)[0] == '-');
  if (!plain || *end != '\0' || errno != 0 || n < min || n > max)
    throw UsageError(std::string(option) + ": expected an integer from " + std::to_string(min) + " to " +
                     std::to_string(max) + ", got '" + *v + "'");
  return n;
}

double Context::real(const char *option, double fallback, double min, bool min_open) const {
  const auto v = value(option);
  if (!v) return fallback;
  const auto n = number_list(*v);
  if (!n || n->size() != 1 || !(min_open ? (*n)[0] > min : (*n)[0] >= min))
    throw UsageError(std::string(option) + ": expected a number " + (min_open ? "> " : ">= ") + short_number(min) +
                     ", got '" + *v + "'");
  return (*n)[0];
}

int axis_from_end(const std::string &text) {
  if (text == "x") return 1;
  if (text == "y") return 2;
  if (text == "band") return 3;
  throw UsageError("--axis: expected x, y or band, got '" + text + "'");
}

std::optional<std::vector<double>> number_list(const std::string &text) {
  std::vector<double> out;
  const char *p = text.c_str();
  while (true) {
    // Decimal numbers only (strtod also takes hexadecimal ones and "inf"), spaces around them.
    p += std::strspn(p, " ");
    const std::size_t length = std::strspn(p, "0123456789+-.eE");
    if (length == 0 || (p[length] != '\0' && p[length] != ',' && p[length] != ' ')) return std::nullopt;
    char *end = nullptr;
    errno = 0;
    const double x = std::strtod(p, &end);
    // ERANGE for a number below the smallest normal (1e-320) too: that one is taken as it rounds.
    if (end != p + length || (errno != 0 && std::fabs(x) >= std::numeric_limits<double>::min()) || !std::isfinite(x))
      return std::nullopt;
    out.push_back(x);
    while (*end == ' ') end++;
    if (*end == '\0') return out;
    if (*end != ',') return std::nullopt;
    p = end + 1;
  }
}

Numbers Numbers::listed_or_read(Context &ctx, const std::string &spec, const char *role) {
  Numbers n;
  n.name = spec;
  n.listed = number_list(spec);
  if (!n.listed) n.file = ctx.read_inputs({spec}, role);
  return n;
}

std::vector<Source> Context::read_inputs(const std::vector<std::string> &specs, const char *role) {
  const std::vector<std::string> files = expand_inputs(specs);
  Progress progress(!quiet, std::string("reading ") + role);
  std::vector<Source> sources = timed("read", [&] { return read_sources(files, read, std::ref(progress)); });
  for (const Source &s : sources) {
    input_files_.insert(input_files_.end(), s.files.begin(), s.files.end());
    if (write.file.wavelengths.empty())
      write.file.wavelengths = s.wavelengths;  // kept when the output has room for them
    bytes_read_ += static_cast<std::int64_t>(s.array.bytes.size());
    inputs_json_.push_back(
        Json().set("role", role).set("path", s.path).set("shape", s.array.shape).set("dtype", name(s.array.dtype)));
    note("read " + s.path + ": " + shape_string(s.array.shape) + " " + name(s.array.dtype));
  }
  return sources;
}

std::int64_t Context::checked_elements(const Shape &shape, std::size_t element_size, const char *what) const {
  const std::int64_t memory = std::int64_t(sysconf(_SC_PHYS_PAGES)) * std::int64_t(sysconf(_SC_PAGESIZE));
  const std::int64_t n = element_count(shape, INT64_MAX / 16);
  if (n < 0 || n * std::int64_t(element_size) > memory)
    throw Failure(std::string(what) + " would have shape " + shape_string(shape) + ", more than this machine's " +
                  std::to_string(memory >> 20) + " MiB of memory");
  return n;
}

std::string Context::output_path() const {
  if (output.empty()) throw UsageError(std::string("hpipe ") + command.name + ": -o OUT is required");
  return output;
}

std::string Context::checked_output_path() const {
  const std::string out = output_path();
  std::vector<std::string> inputs = input_files_;
  inputs.insert(inputs.end(), positional.begin(), positional.end());
  check_output_name(out, inputs, write.force);
  return out;
}

template <class T>
WriteReport Context::write_output(const std::string &target, const Shape &shape, const hpipe::AlignedVector<T> &data,
                                  DType default_type) {
  Progress progress(!quiet, "writing");
  const WriteReport r = timed("write", [&] {
    return write_stack(target, shape, data, write, default_type, input_files_, outputs(), std::ref(progress));
  });
  bytes_written_ += r.bytes_written;
  Json o;
  o.set("path", target)
      .set("files", static_cast<std::int64_t>(r.files.size()))
      .set("shape", shape)
      .set("dtype", name(r.type));
  o.set("clipped", r.clipped);
  if (r.range) o.set("range", Json().set("min", r.range->lo).set("max", r.range->hi));
  outputs_json_.push_back(o);
  for (const std::string &f : r.files) note("wrote " + f);
  std::string line = "wrote " +
                     (r.files.size() == 1 ? r.files[0] : std::to_string(r.files.size()) + " files " + target) + ": " +
                     shape_string(shape) + " as " + name(r.type);
  if (r.range) line += ", [" + short_number(r.range->lo) + ", " + short_number(r.range->hi) + "] -> full range";
  written_.push_back(line);
  if (r.clipped)
    warn(target + ": " + std::to_string(r.clipped) + " values were outside the " + name(r.type) + " range and " +
         (r.type == DType::f32 ? "became +-inf" : "were clipped") + " (try --scale auto)");
  return r;
}
template WriteReport Context::write_output<float>(const std::string &, const Shape &,
                                                  const hpipe::AlignedVector<float> &, DType);
template WriteReport Context::write_output<double>(const std::string &, const Shape &,
                                                   const hpipe::AlignedVector<double> &, DType);

OutputSet &Context::outputs() {
  if (!outputs_) outputs_ = std::make_unique<OutputSet>(write.force);
  return *outputs_;
}

void Context::commit_outputs() {
  if (outputs_) timed("write", [&] { outputs_->commit(); });
  for (const std::string &line : written_) say(line);
}

void Context::add_time(const std::string &phase, double ms) {
  for (auto &t : times_)
    if (t.first == phase) {
      t.second += ms;
      return;
    }
  times_.emplace_back(phase, ms);
}

void Context::say(const std::string &line) const {
  if (!quiet && !json) std::printf("%s\n", line.c_str());
}
void Context::note(const std::string &line) const {
  if (verbose && !quiet) std::fprintf(stderr, "hpipe: %s\n", line.c_str());
}
void Context::warn(const std::string &line) const {
  if (!quiet) std::fprintf(stderr, "hpipe: warning: %s\n", line.c_str());
}

std::string Context::times_line() const {
  std::string s;
  for (const auto &t : times_) s += (s.empty() ? "" : ", ") + t.first + " " + format_ms(t.second);
  return s;
}

std::string Context::finish_json(double total_ms) const {
  Json j;
  j.set("command", command.name);
  Json times;
  for (const auto &t : times_) times.set(t.first, t.second);
  times.set("total", total_ms);
  // Where the kernels ran: auto means CUDA exactly when it is usable (the tool passes host memory).
  const Device ran = options.device != Device::automatic ? options.device
                     : cuda_available()                  ? Device::cuda
                                                         : Device::cpu;
  j.set("device", to_string(ran)).set("device_requested", to_string(options.device)).set("threads", num_threads());
  j.set("inputs", inputs_json_).set("outputs", outputs_json_);
  j.set("result", summary);
  j.set("times_ms", times);
  j.set("bytes", Json().set("read", bytes_read_).set("written", bytes_written_));
  return j.str();
}

// ---- main ----

// The one line of an error: a value or a file name with line breaks in it is shown escaped.
void print_error(const std::string &message) {
  std::string line;
  for (const char c : message) line += c == '\n' ? "\\n" : c == '\r' ? "\\r" : std::string(1, c);
  std::fprintf(stderr, "hpipe: error: %s\n", line.c_str());
}

int main(int argc, char **argv) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    if (args.size() > 1) {
      for (const Command &c : commands())
        if (args[1] == c.name) {
          print_help(std::cout, c);
          return 0;
        }
      print_error("unknown command '" + args[1] + "' (see hpipe --help)");  // help of it said 0
      return 2;
    }
    print_overview(args.empty() ? std::cerr : std::cout);
    return args.empty() ? 2 : 0;
  }
  const Command *command = nullptr;
  for (const Command &c : commands())
    if (args[0] == c.name) command = &c;
  if (!command) {
    print_error("unknown command '" + args[0] + "' (see hpipe --help)");
    return 2;
  }
  try {
    Context ctx(*command, std::vector<std::string>(args.begin() + 1, args.end()));
    if (ctx.has("--help")) {
      print_help(std::cout, *command);
      return 0;
    }
    if (ctx.has("--threads")) set_num_threads(static_cast<int>(ctx.integer("--threads", 0, 1, 1024)));
    const int status = command->run(ctx);
    ctx.commit_outputs();
    const double total = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (ctx.json) {
      std::printf("%s\n", ctx.finish_json(total).c_str());
    } else if (!ctx.quiet) {
      ctx.say("times: " + ctx.times_line() + (ctx.times_line().empty() ? "" : ", ") + "total " + format_ms(total));
    }
    return status;
  } catch (const UsageError &e) {
    print_error(e.what());
    return 2;
  } catch (const std::bad_alloc &) {
    print_error("out of memory");
  } catch (const std::exception &e) {  // Failure, hpipe::Error and the rest
    print_error(e.what());
  }
  return 1;
}

}  // namespace hpipe::cli
