// The hpipe tool's frame: the subcommand table, argument parsing, the options every subcommand
// shares, the progress bar and the summary (human lines, or JSON with --json).
//
// Adding a subcommand takes one function and one table entry:
//   1. tools/hpipe/cmd_<name>.cpp: `int run_<name>(Context &ctx)` that reads its inputs with
//      ctx.read_inputs(), calls the public hpipe API, writes with ctx.write_output(), and records
//      what it did with ctx.summary / ctx.say(). Declare it in commands.h.
//   2. One entry in kCommands (commands.cpp): name, arguments, summary, example, its own options,
//      which shared option groups it takes (kReads, kWrites), and the function.
// Add the .cpp to tools/CMakeLists.txt and a test to tests/test_cli.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "array.h"
#include "errors.h"
#include "file.h"
#include "hpipe/device.h"
#include "stack.h"

namespace hpipe::cli {

class Context;

struct Option {
  const char *name;       // "--mask"
  const char *shorthand;  // "-o", or nullptr
  const char *value;      // "FILE" for an option taking a value, nullptr for a flag
  const char *help;
};

enum Group : unsigned {
  kReads = 1,     // --raw
  kWrites = 2,    // -o, --type, --scale, --force
  kComputes = 4,  // --precision
};

struct Command {
  const char *name;
  const char *arguments;  // "forward|adjoint|pinv|pinv-alpha|phi STACK"
  const char *summary;
  const char *details;  // more help text, or ""
  const char *example;
  std::vector<Option> options;
  unsigned groups;
  int (*run)(Context &);
};

const std::vector<Command> &commands();  // commands.cpp

// A JSON object built field by field, in order.
class Json {
 public:
  Json &set(const std::string &key, const std::string &value);
  Json &set(const std::string &key, const char *value) { return set(key, std::string(value)); }
  Json &set(const std::string &key, double value);
  Json &set(const std::string &key, std::int64_t value);
  Json &set(const std::string &key, int value) { return set(key, std::int64_t(value)); }
  Json &set(const std::string &key, bool value);
  Json &set(const std::string &key, const Shape &shape);
  Json &set(const std::string &key, const Json &object);
  Json &set(const std::string &key, const std::vector<Json> &objects);
  Json &set(const std::string &key, const std::vector<std::string> &strings);
  Json &set(const std::string &key, const std::vector<double> &numbers);
  std::string str() const;

 private:
  Json &raw(const std::string &key, const std::string &json);
  std::vector<std::pair<std::string, std::string>> fields_;
};

// A progress bar on stderr, drawn only on a terminal, without -q, once work has taken a moment.
class Progress {
 public:
  Progress(bool enabled, std::string label);
  ~Progress();
  void operator()(std::size_t done, std::size_t total);

 private:
  bool enabled_;
  bool drawn_ = false;
  std::string label_;
  std::chrono::steady_clock::time_point start_, last_;
};

class Context {
 public:
  Context(const Command &command, const std::vector<std::string> &args);  // UsageError on bad usage

  const Command &command;
  std::vector<std::string> positional;
  Options options;  // --device
  bool quiet = false, json = false;
  int verbose = 0;
  ReadOptions read;
  WriteOptions write;
  std::string output;                 // -o
  std::optional<bool> precision_f64;  // --precision f32|f64; unset: auto
  Json summary;                       // the command's own fields; main adds times, bytes and the device

  bool has(const char *option) const;
  std::optional<std::string> value(const char *option) const;
  std::string required(const char *option) const;  // UsageError when missing
  std::int64_t integer(const char *option, std::int64_t fallback, std::int64_t min, std::int64_t max) const;
  // A finite number; `min_open`: min itself is excluded (> min rather than >= min).
  double real(const char *option, double fallback, double min, bool min_open = false) const;

  // Expands input specs and reads them (progress bar "reading"), adding to the summary's inputs.
  std::vector<Source> read_inputs(const std::vector<std::string> &specs, const char *role);
  // The sources as one stack of values (see to_stack; honours --raw), timed as "decode".
  template <class T>
  Stack<T> stack(std::vector<Source> &&sources) {
    return timed("decode", [&] { return to_stack<T>(std::move(sources), read); });
  }
  // A zeroed result of `shape`; a Failure (not an out-of-memory crash) when it cannot fit in RAM.
  template <class T>
  hpipe::AlignedVector<T> allocate(const Shape &shape, const char *what) const {
    return hpipe::AlignedVector<T>(static_cast<std::size_t>(checked_elements(shape, sizeof(T), what)));
  }
  // -o OUT; UsageError when missing.
  std::string output_path() const;
  // -o OUT of a command that writes it, checked before any work (check_output_name) against the
  // inputs read so far and the positional arguments (the inputs of commands that read later).
  std::string checked_output_path() const;
  // Writes to `target` (see write_stack): progress "writing", the report in the summary, a
  // warning for clipped values. The files appear when main commits the command's outputs.
  template <class T>
  WriteReport write_output(const std::string &target, const Shape &shape, const hpipe::AlignedVector<T> &data,
                           DType default_type);
  // The command's outputs, all committed together once it has succeeded (none when it fails).
  OutputSet &outputs();
  // Renames every output into place, then says what was written.
  void commit_outputs();

  // Runs `f` and adds its wall time to times_ms[phase].
  template <class F>
  auto timed(const char *phase, F &&f) {
    const auto t0 = std::chrono::steady_clock::now();
    struct Stop {
      Context *c;
      const char *p;
      std::chrono::steady_clock::time_point t0;
      ~Stop() {
        c->add_time(p, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
    } stop{this, phase, t0};
    return f();
  }
  void add_time(const std::string &phase, double ms);

  // A line of the human summary on stdout (not with -q or --json); note() goes to stderr with -v.
  void say(const std::string &line) const;
  void note(const std::string &line) const;
  void warn(const std::string &line) const;

  // Calls f(float{}) or f(double{}): float64 with --precision f64, or with auto (the default) when an
  // input (the mask and the taps included) is float64, which runs 2-3x slower. Says which and why
  // (-v, and "precision" in --json).
  template <class F>
  int with_precision(bool float64_input, F &&f) {
    const bool f64 = precision_f64.value_or(float64_input);
    report_precision(f64, float64_input);
    return f64 ? f(double{}) : f(float{});
  }
  void report_precision(bool f64, bool float64_input);

  // The options as given, in order, with their values ("" for a flag): what `hpipe batch` passes on.
  const std::vector<std::pair<const Option *, std::string>> &given() const { return given_; }

  // Every file read so far (outputs may never replace one).
  const std::vector<std::string> &input_files() const { return input_files_; }
  std::string finish_json(double total_ms) const;
  std::int64_t checked_elements(const Shape &shape, std::size_t element_size, const char *what) const;
  std::string times_line() const;

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::pair<const Option *, std::string>> given_;
  std::vector<std::string> input_files_;
  std::unique_ptr<OutputSet> outputs_;
  std::vector<std::string> written_;  // the "wrote ..." lines, said once committed
  std::vector<Json> inputs_json_, outputs_json_;
  std::vector<std::pair<std::string, double>> times_;
  std::int64_t bytes_read_ = 0, bytes_written_ = 0;
};

// --axis x|y|band of a stack (..., C, H, W), counted from the end: x = 1 (the last axis), y = 2,
// band = 3; a UsageError otherwise.
int axis_from_end(const std::string &text);

// "1,2,1" or "0.5, -1e-3" as numbers; nullopt when `text` is not such a list.
std::optional<std::vector<double>> number_list(const std::string &text);

// Numbers given on the command line (--taps 1,2,1) or read from a file (--taps-file k.npy).
struct Numbers {
  std::string name;                           // the list or the file, for messages
  std::optional<std::vector<double>> listed;  // from the command line
  std::vector<Source> file;                   // else read from here
  // Reads `spec` as a list when it is one, else as a file (role names it in the summary).
  static Numbers listed_or_read(Context &ctx, const std::string &spec, const char *role);
  bool float64() const { return any_float64(file); }
  // The values: a listed (n,) vector, or the file's stack.
  template <class T>
  Stack<T> values(Context &ctx) {
    if (!listed) return ctx.stack<T>(std::move(file));
    Stack<T> s;
    s.shape = {static_cast<std::int64_t>(listed->size())};
    s.data.assign(listed->begin(), listed->end());
    return s;
  }
};

// The command-line entry point: parses, runs, reports; returns the exit status (0, 1 or 2).
int main(int argc, char **argv);

}  // namespace hpipe::cli
