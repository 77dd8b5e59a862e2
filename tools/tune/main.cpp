// hpipe-tune: tunes the knobs of hpipe's schedules for this machine (CPU, in-process) or for a GPU
// host (CUDA, through a measurement bundle), and exports the winners for the AOT build.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "tools/flush_stdout.h"
#include "tools/tune/bundle.h"
#include "tools/tune/tuner.h"

namespace hpipe::tune {
namespace {

const char *kUsage = R"(usage: hpipe-tune <command> [options]

commands:
  tune      tune CPU schedules in-process (JIT), appending to the database
  bundle    write and build the CUDA measurement bundle (run it on a GPU host)
  import    append a bundle's results (JSON lines) to the database
  report    per op: default vs best time, speedup, variants tried/failed/discarded
  export    write the tuned-knobs file for -DHPIPE_TUNING_FILE=<file>
  defaults  write (--out) or compare (--check) the default-knobs file (cmake/default_knobs.json)
  list      the tunable ops and their knob spaces

options:
  --db FILE            results database, JSON lines (default hpipe-tune.jsonl)
  --ops a,b            ops to tune or bundle (default: all)
  --budget 10m         time budget of the whole `tune` command (s, m or h; default 10m): shared
                       out among the ops, the final re-measurement included; no compile or
                       measurement starts that would end past it, as those before took (each
                       op's default is measured whatever the budget)
  --max-variants N     knob variants per op (default 64)
  --strategy S         auto (exhaustive if the space fits, else random then greedy), exhaustive,
                       random, greedy (default auto)
  -j N                 compile N variants in parallel (default 2); variants are timed one at a time
  --resume             skip variants the database already has for this machine and target
  --size S             workload (W4 sizes, default) or small (for CI)
  --target T           Halide target of `tune` (default: the host's) or of `bundle`'s CUDA code
  --min-time S         seconds of timed samples per variant (default 0.1)
  --no-autoschedulers  do not try Adams2019 and Mullapudi2016
  --inject-wrong       test: add a deliberately wrong variant, which verification must discard
  --no-progress        no progress bar
  --out FILE|DIR       export / defaults / bundle output
  --check FILE         defaults: fail unless FILE holds exactly the C++ defaults
  --gpu NAME           export: the GPU whose CUDA records to use (default: the latest one)
)";

// --ops: op names joined by commas, each once (a repeat would be tuned twice); an empty list or
// name is an error (it selected every op).
std::vector<std::string> op_list(const std::string &text) {
  std::vector<std::string> out;
  std::size_t from = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', from), text.size());
    const std::string name = text.substr(from, comma - from);
    if (name.empty())
      throw std::invalid_argument("--ops: expected op names joined by commas (see hpipe-tune list), got '" + text +
                                  "'");
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    if (comma == text.size()) return out;
    from = comma + 1;
  }
}

// A finite number > 0 at the start of `text`, and the rest; nullopt when there is none.
std::optional<std::pair<double, std::string>> positive_number(const std::string &text) {
  char *end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || errno != 0 || !std::isfinite(v) || !(v > 0) || std::isspace(*text.c_str()))
    return std::nullopt;
  return std::make_pair(v, std::string(end));
}

// --budget: seconds, minutes or hours (90s, 10m, 1.5h; a bare number is seconds), more than 0 and
// at most a year (deadlines are clock times in int64 nanoseconds, which 1e7h overflowed: nothing
// was tuned).
double duration(const std::string &option, const std::string &text) {
  constexpr double kMostSeconds = 365 * 24 * 3600.0;
  const auto n = positive_number(text);
  const std::string unit = n ? n->second : "";
  if (n && (unit.empty() || unit == "s" || unit == "m" || unit == "h")) {
    const double seconds = n->first * (unit == "m" ? 60 : unit == "h" ? 3600 : 1);
    if (seconds <= kMostSeconds) return seconds;
    throw std::invalid_argument(option + ": expected a duration of at most a year (8760h), got '" + text + "'");
  }
  throw std::invalid_argument(option + ": expected a duration > 0 such as 90s, 10m or 1h, got '" + text + "'");
}

// --min-time: seconds, more than 0.
double positive_seconds(const std::string &option, const std::string &text) {
  const auto n = positive_number(text);
  if (!n || !n->second.empty())
    throw std::invalid_argument(option + ": expected a number of seconds > 0, got '" + text + "'");
  return n->first;
}

// --max-variants, -j: an integer from 1 to `most`.
int count(const std::string &option, const std::string &text, int most) {
  char *end = nullptr;
  errno = 0;
  const long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || n < 1 || n > most || std::isspace(*text.c_str()))
    throw std::invalid_argument(option + ": expected an integer from 1 to " + std::to_string(most) + ", got '" + text +
                                "'");
  return static_cast<int>(n);
}

// Writes `text` to `path` (--out), checked: a folder that does not exist or a full disk is an
// error, not "wrote". The text goes to a temporary file beside it, renamed over `path` once
// complete, so that a failed write leaves the previous file whole and no partial one. A path that
// is not a regular file (/dev/stdout, a pipe) is written in place; a symbolic link's target is
// replaced, not the link.
void write_file(const std::string &path, const std::string &text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  const auto fail = [&](int error) {
    throw std::runtime_error("--out " + path + ": cannot write: " + std::strerror(error));
  };
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    if (fs::is_directory(status)) fail(EISDIR);
    std::ofstream out(path, std::ios::binary);
    if (out) out << text;
    if (out) out.close();
    if (!out) fail(errno);
    return;
  }
  const std::string target = fs::is_symlink(fs::symlink_status(path, ec)) ? fs::canonical(path).string() : path;
  std::string temporary = target + ".XXXXXX";
  const int fd = mkstemp(temporary.data());
  if (fd < 0) fail(errno);
  // mkstemp's file is private (0600): give it the mode the file had, or a new file's.
  const mode_t mask = umask(0);
  umask(mask);
  struct stat old {};
  fchmod(fd, stat(target.c_str(), &old) == 0 ? old.st_mode & 07777 : 0666 & ~mask);
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<std::size_t>(n);
  }
  const int write_error = written == text.size() ? 0 : errno ? errno : EIO;
  const bool closed = ::close(fd) == 0;
  const int error = write_error                                      ? write_error
                    : !closed                                        ? errno
                    : std::rename(temporary.c_str(), target.c_str()) ? errno
                                                                     : 0;
  if (error) {
    std::remove(temporary.c_str());
    fail(error);
  }
}

// The best verified knobs per op of one context, from the latest record of each variant, at the
// shape most recently measured for that op (records are appended: the file's last is the latest).
std::map<std::string, std::string> best_knobs(const std::vector<Record> &records, const Record &where) {
  std::map<std::string, std::string> shape, knobs;
  std::map<std::string, double> time;
  for (const Record &r : records)
    if (r.same_context(where)) shape[r.op] = r.shape;
  for (const Record &r : latest_of_context(records, where)) {
    if (r.scheduler != "knobs" || !r.verified() || r.shape != shape[r.op]) continue;
    if (!time.count(r.op) || r.time_ms < time[r.op]) time[r.op] = r.time_ms, knobs[r.op] = r.knobs;
  }
  return knobs;
}

// --out must not be one of the command's inputs (`export --out X --db X` replaced the database with
// the knobs file): the same file, through any path, when both exist; else the same path.
void check_not_an_input(const std::string &out, const std::string &input_option, const std::string &input) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool same = fs::exists(out, ec) && fs::exists(input, ec)
                        ? fs::equivalent(out, input, ec)
                        : fs::weakly_canonical(out, ec) == fs::weakly_canonical(input, ec);
  if (same)
    throw std::invalid_argument("--out " + out + ": expected a file other than the input " + input_option + " " +
                                input + ", which it would overwrite");
}

int export_knobs(const std::string &db, const std::string &out_path, const std::string &target,
                 const std::string &gpu) {
  check_not_an_input(out_path, "--db", db);
  // Knobs this build cannot read (another version's) would fail the build that reads the file.
  const std::vector<Record> records = usable_records(load_records(db), db);
  const Context host = host_context(target);
  Record cpu;
  cpu.backend = "cpu", cpu.machine = host.machine, cpu.target = host.target, cpu.threads = host.threads;
  const Record *cuda = nullptr;
  for (const Record &r : records)
    if (r.backend == "cuda" && (gpu.empty() || r.machine == gpu)) cuda = &r;  // the latest
  if (!gpu.empty() && !cuda) {  // a misspelt name would export the CPU's knobs alone
    std::set<std::string> gpus;
    for (const Record &r : records)
      if (r.backend == "cuda") gpus.insert(r.machine);
    std::string known;
    for (const auto &name : gpus) known += (known.empty() ? "" : ", ") + ("'" + name + "'");
    std::cerr << "hpipe-tune export: --gpu: no CUDA records of '" << gpu << "'; the database has "
              << (known.empty() ? "none" : known) << "\n";
    return 2;
  }
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> by_op;
  for (const auto &[op, text] : best_knobs(records, cpu)) by_op[op].push_back({"cpu", text});
  if (cuda)
    for (const auto &[op, text] : best_knobs(records, *cuda)) by_op[op].push_back({"cuda", text});
  if (by_op.empty()) {
    std::cerr << "hpipe-tune export: no verified records for " << host.machine << " / " << host.target << " ("
              << host.threads << " threads)" << (gpu.empty() ? "" : " nor GPU " + gpu) << "\n";
    return 1;
  }
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> kernels;
  for (const auto &op : registry())  // registry order, only ops known here
    if (by_op.count(op.name)) kernels.push_back({op.name, by_op[op.name]});
  std::string comment = "Tuned by hpipe-tune: cpu on " + host.machine + " (" + host.target + ", " +
                        std::to_string(host.threads) + " threads)";
  if (cuda) comment += "; cuda on " + cuda->machine + " (" + cuda->target + ")";
  write_file(out_path, knobs_json(kernels, comment));
  std::cerr << "hpipe-tune: wrote " << out_path << " (" << kernels.size() << " kernels)\n";
  return 0;
}

int defaults(const std::string &out_path, const std::string &check_path) {
  const std::string text = defaults_json();
  if (!check_path.empty() && !out_path.empty())
    throw std::invalid_argument("defaults takes --out FILE (write) or --check FILE (compare), not both");
  if (!check_path.empty()) {
    std::ifstream in(check_path);
    if (!in) throw std::invalid_argument("--check " + check_path + ": cannot read it");
    std::stringstream have;
    have << in.rdbuf();
    if (have.str() != text) {
      std::cerr << "hpipe-tune: " << check_path
                << " does not match the C++ defaults; regenerate it with `hpipe-tune defaults --out " << check_path
                << "`. Expected:\n"
                << text;
      return 1;
    }
    return 0;
  }
  if (out_path.empty()) {
    std::cout << text;
  } else {
    write_file(out_path, text);
  }
  return 0;
}

void list() {
  for (const auto &op : registry()) {
    std::cout << op.name << "\n";
    for (const auto *space : {&op.cpu, &op.cuda}) {
      std::cout << "  " << (space == &op.cpu ? "cpu " : "cuda") << "  defaults " << space->defaults << "; "
                << enumerate(*space).size() << " valid variants:";
      for (std::size_t i = 0; i < space->names.size(); i++) {
        std::cout << " " << space->names[i] << "{";
        for (std::size_t j = 0; j < space->candidates[i].size(); j++)
          std::cout << (j ? "," : "") << space->candidates[i][j];
        std::cout << "}";
      }
      std::cout << "\n";
    }
  }
}

int run(int argc, char **argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  const std::set<std::string> commands = {"tune", "bundle", "import", "report", "export", "defaults", "list"};
  if (!commands.count(command))
    throw std::invalid_argument("unknown command '" + command + "' (see hpipe-tune --help)");
  TuneOptions o;
  BundleOptions b;
  std::string out, check, gpu;
  std::vector<std::string> words;  // arguments that are not options: import's results file
  bool budget_given = false, min_time_given = false;
  for (int i = 2; i < argc; i++) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--db")
      o.db = value();
    else if (a == "--ops")
      o.ops = b.ops = op_list(value());
    else if (a == "--budget")
      o.budget_s = duration(a, value()), budget_given = true;
    else if (a == "--max-variants")
      o.max_variants = b.max_variants = count(a, value(), 1 << 20);
    else if (a == "--strategy")
      o.strategy = value();
    else if (a == "-j")
      o.jobs = b.jobs = count(a, value(), 1024);
    else if (a.rfind("-j", 0) == 0 && a.size() > 2)
      o.jobs = b.jobs = count("-j", a.substr(2), 1024);
    else if (a == "--resume")
      o.resume = true;
    else if (a == "--size") {
      const std::string s = value();
      if (s != "small" && s != "workload") throw std::invalid_argument("--size is small or workload, got '" + s + "'");
      o.size = b.size = s == "small" ? Size::small : Size::workload;
    } else if (a == "--target")
      o.target = b.target = value();
    else if (a == "--min-time")
      o.min_time = positive_seconds(a, value()), min_time_given = true;
    else if (a == "--no-autoschedulers")
      o.autoschedulers = false;
    else if (a == "--inject-wrong")
      o.inject_wrong = b.inject_wrong = true;
    else if (a == "--no-progress")
      o.progress = false;
    else if (a == "--out")
      out = value();
    else if (a == "--check")
      check = value();
    else if (a == "--gpu")
      gpu = value();
    else if (a.empty() || a[0] != '-')
      words.push_back(a);
    else
      throw std::invalid_argument("unknown option '" + a + "' (see hpipe-tune --help)");
  }
  if (o.strategy != "auto" && o.strategy != "exhaustive" && o.strategy != "random" && o.strategy != "greedy")
    throw std::invalid_argument("--strategy is auto, exhaustive, random or greedy, got '" + o.strategy + "'");

  // import takes its results file; a word any other command was given was a mistake, ignored
  // (`export mine.json` wrote tuned_knobs.json, `report other.jsonl` read the default database).
  const std::size_t words_taken = command == "import" ? 1 : 0;
  if (words.size() > words_taken)
    throw std::invalid_argument(command + ": unexpected argument '" + words[words_taken] + "'" +
                                (command == "export" || command == "defaults" ? " (the output is --out FILE)" : "") +
                                (command == "report" ? " (the database is --db FILE)" : "") +
                                " (see hpipe-tune --help)");

  if (command == "tune") return tune(o);
  if (command == "report") {
    if (!std::ifstream(o.db))
      throw std::invalid_argument("--db " + o.db + ": cannot read it (run `hpipe-tune tune` first)");
    return print_report(load_records(o.db), std::cout), 0;
  }
  if (command == "export") return export_knobs(o.db, out.empty() ? "tuned_knobs.json" : out, o.target, gpu);
  if (command == "defaults") return defaults(out, check);
  if (command == "list") return list(), 0;
  if (command == "bundle") {
    // The bundle measures elsewhere, later: these would be silently ignored here.
    if (min_time_given)
      throw std::invalid_argument("bundle: --min-time is the bundle's own option (./hpipe-tune-bundle --min-time S)");
    if (budget_given) throw std::invalid_argument("bundle: --budget applies to tune; a bundle measures every variant");
    if (out.empty()) throw std::invalid_argument("bundle needs --out DIR");
    b.dir = out;
    return make_bundle(b);
  }
  if (command == "import") {
    if (words.empty()) throw std::invalid_argument("import needs the results file");
    return import_results(words[0], o.db);
  }
  throw std::invalid_argument("unknown command '" + command + "' (see hpipe-tune --help)");
}

}  // namespace
}  // namespace hpipe::tune

int main(int argc, char **argv) {
  int status = 2;
  try {
    status = hpipe::tune::run(argc, argv);
  } catch (const std::runtime_error &e) {  // a failure doing the work (a write)
    std::cerr << "hpipe-tune: error: " << e.what() << "\n";
    status = 1;
  } catch (const std::exception &e) {  // bad usage
    std::cerr << "hpipe-tune: " << e.what() << "\n";
  }
  return hpipe::tools::flush_stdout("hpipe-tune", status);
}
