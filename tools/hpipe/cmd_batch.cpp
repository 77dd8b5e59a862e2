// hpipe batch cassi|recon MODE INPUTS -o OUTDIR: the subcommand once per input file, each in its
// own process (`hpipe cassi MODE FILE -o OUTDIR/NAME.npy ...`), so an item runs exactly the code
// of a single call and a crash or a bad file costs that item alone. The items are a folder's
// files or a manifest's rows; each output is named after its input and appears atomically (the
// subcommand's OutputSet), so a re-run skips the complete ones. --shard i/n (or a Slurm array /
// Kubernetes Indexed Job index) picks items i, i+n, ...; --scheduler hands the items to a Dask
// cluster through the Python package (python/hpipe/batch.py), which runs them as one-item shards.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>

#include "commands.h"
#include "file.h"
#include "formats.h"

extern char **environ;

namespace hpipe::cli {

const std::vector<Option> kBatchOptions = {
    {"--shard", nullptr, "I/N",
     "run items I, I+N, I+2N, ... only (default: a Slurm array's or Kubernetes Indexed Job's index, when set)"},
    {"--workers", nullptr, "N", "items run at once here (default: the cores, at most the items)"},
    {"--scheduler", nullptr, "ADDRESS",
     "run the items on the Dask cluster at tcp://HOST:PORT (needs the Python package)"},
    {"--ext", nullptr, "EXT",
     "the outputs' format: OUTDIR/NAME.EXT, npy (default), png (2-D results), mat, h5, tif, hdr"},
    {"--list", nullptr, nullptr, "print the items (input, output, complete or not) and run nothing"},
};

namespace {

constexpr int kAttempts = 2;  // a failed item is retried once

// Options that steer the batch itself, not the items' command (which get --json, read for what
// they clipped, and --threads).
bool batch_only(const Option *o) {
  for (const Option &own : kBatchOptions)
    if (std::strcmp(o->name, own.name) == 0) return true;
  for (const char *name : {"--output", "--threads", "--quiet", "--verbose", "--json", "--help"})
    if (std::strcmp(o->name, name) == 0) return true;
  return false;
}

struct Item {
  std::string input, output;
};

std::string base_name(const std::string &path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const std::size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// The file name without its last extension or a selector: scene_07.mat:img -> scene_07.
std::string stem(const std::string &path) {
  const std::string name = base_name(split_selector(path).file);
  const std::size_t dot = name.rfind('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

// A folder, a glob or @list expand as for any stack; a .txt file is a manifest (one input a
// line, as @list); any other file is one item.
std::vector<std::string> item_inputs(const std::vector<std::string> &sources) {
  std::vector<std::string> inputs;
  for (const std::string &s : sources) {
    const bool manifest = s.size() > 4 && lower_case(s.substr(s.size() - 4)) == ".txt" && exists(s);
    const std::vector<std::string> more = expand_inputs({manifest ? "@" + s : s});
    inputs.insert(inputs.end(), more.begin(), more.end());
  }
  return inputs;
}

struct Shard {
  std::int64_t index = 0, count = 1;
};

std::int64_t whole_number(const std::string &text, const std::string &what) {
  char *end = nullptr;
  errno = 0;
  const long long n = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || n < 0)
    throw UsageError(what + ": expected a whole number, got '" + text + "'");
  return n;
}

Shard checked(Shard s, const std::string &what) {
  if (s.count < 1 || s.index < 0 || s.index >= s.count)
    throw UsageError(what + ": expected an index from 0 to the count - 1 and a count >= 1, got " +
                     std::to_string(s.index) + "/" + std::to_string(s.count));
  return s;
}

const char *env(const char *name) {
  const char *v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// --shard I/N, else a Slurm job array's task (counted from its first index), else a Kubernetes
// Indexed Job's completion index with the count the Job passes in JOB_COMPLETIONS; else all items.
Shard shard_of(const Context &ctx) {
  if (const auto text = ctx.value("--shard")) {
    const std::size_t slash = text->find('/');
    if (slash == std::string::npos)
      throw UsageError("--shard: expected I/N (0/4 is the first of 4), got '" + *text + "'");
    return checked({whole_number(text->substr(0, slash), "--shard"), whole_number(text->substr(slash + 1), "--shard")},
                   "--shard");
  }
  if (const char *id = env("SLURM_ARRAY_TASK_ID")) {
    const char *count = env("SLURM_ARRAY_TASK_COUNT");
    if (!count) throw UsageError("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not (give --shard I/N)");
    const char *min = env("SLURM_ARRAY_TASK_MIN");
    const std::int64_t first = min ? whole_number(min, "SLURM_ARRAY_TASK_MIN") : 0;
    return checked({whole_number(id, "SLURM_ARRAY_TASK_ID") - first, whole_number(count, "SLURM_ARRAY_TASK_COUNT")},
                   "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT (use --array=0-(N-1) or --array=1-N, no step)");
  }
  if (const char *index = env("JOB_COMPLETION_INDEX")) {
    const char *count = env("JOB_COMPLETIONS");
    if (!count)
      throw UsageError(
          "JOB_COMPLETION_INDEX is set but JOB_COMPLETIONS is not: set it to the Job's completions "
          "(or give --shard I/N)");
    return checked({whole_number(index, "JOB_COMPLETION_INDEX"), whole_number(count, "JOB_COMPLETIONS")},
                   "JOB_COMPLETION_INDEX/JOB_COMPLETIONS");
  }
  return {};
}

int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
}

std::string this_executable() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw Failure("cannot find the hpipe executable (/proc/self/exe): " + std::string(std::strerror(errno)));
  return std::string(buf, static_cast<std::size_t>(n));
}

// What a batch runs: the subcommand and mode, the options passed on, the items.
struct Plan {
  std::vector<std::string> command;  // {"recon", "gap-tv"}
  std::vector<std::string> passed;   // "--mask=m.png", "--iters=10", "--force", ...
  std::vector<std::string> sources;  // the inputs as given
  std::string outdir, ext;
  std::vector<Item> items;
};

Plan plan_of(const Context &ctx) {
  Plan p;
  const std::vector<std::string> &pos = ctx.positional;
  if (pos.empty() || (pos[0] != "cassi" && pos[0] != "recon"))
    throw UsageError("hpipe batch: expected cassi or recon, then its mode and the inputs (see hpipe batch --help)");
  if (pos.size() < 3)
    throw UsageError("hpipe batch " + pos[0] + ": expected a mode and a folder or manifest of inputs");
  if (pos[1] == "phi") throw UsageError("hpipe batch cassi phi: phi has no inputs to batch over");
  p.command = {pos[0], pos[1]};
  p.sources.assign(pos.begin() + 2, pos.end());
  for (const auto &[option, value] : ctx.given())
    if (!batch_only(option)) p.passed.push_back(option->value ? std::string(option->name) + "=" + value : option->name);
  // The item's command parses the options it is given: one it does not take is bad usage now,
  // not a failure of every item.
  for (const Command &c : commands())
    if (p.command[0] == c.name) {
      const Context item(c, p.passed);
      if (p.command[0] == "recon") checked_recon_method(item, p.command[1]);
    }
  p.outdir = ctx.output_path();
  while (p.outdir.size() > 1 && p.outdir.back() == '/') p.outdir.pop_back();
  if (exists(p.outdir) && !is_directory(p.outdir)) throw UsageError(p.outdir + ": -o names a file; expected a folder");
  if (ctx.has("--preview"))
    throw UsageError("--preview: every item would draw into the same folder; preview single items");
  p.ext = ctx.value("--ext").value_or("npy");
  try {
    output_format("item." + p.ext);
  } catch (const UsageError &) {
    throw UsageError("--ext: expected an output format's extension (npy, png, mat, h5, tif, hdr), got '" + p.ext + "'");
  }
  // An item's command reads its output name as a printf pattern where it has a '%' (--output).
  if (p.outdir.find('%') != std::string::npos)
    throw UsageError(p.outdir + ": -o names the output folder; a '%' in it would make each item's output a pattern");
  std::map<std::string, std::string> named;  // output -> input
  for (const std::string &in : item_inputs(p.sources)) {
    if (stem(in).find('%') != std::string::npos)
      throw UsageError(in + ": an output named after it would hold a '%', which hpipe reads as a pattern; rename it");
    const std::string out = p.outdir + "/" + stem(in) + "." + p.ext;
    const auto [it, fresh] = named.emplace(out, in);
    if (!fresh)
      throw UsageError(in + " and " + it->second + " would both write " + out + " (outputs are named after inputs)");
    p.items.push_back({in, out});
  }
  return p;
}

// ---- the local pool ----

// Running children, for the signal handler: a stopped batch stops its items, which remove their
// temporary files (OutputSet) before they exit.
constexpr int kMaxWorkers = 1024;
volatile sig_atomic_t g_children[kMaxWorkers];

void stop_children_and_reraise(int sig) {
  for (int i = 0; i < kMaxWorkers; i++)
    if (g_children[i] > 0) kill(static_cast<pid_t>(g_children[i]), SIGTERM);
  // Gone before the batch is: no item commits an output after its batch was stopped.
  for (int i = 0; i < kMaxWorkers; i++)
    if (g_children[i] > 0) waitpid(static_cast<pid_t>(g_children[i]), nullptr, 0);
  signal(sig, SIG_DFL);
  raise(sig);
}

// The signals that stop a batch, blocked while a child is started and recorded (a stop in between
// would leave it running unseen); the child starts with them unblocked.
class StopSignalsHeld {
 public:
  StopSignalsHeld() {
    sigemptyset(&stop_);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop_, sig);
    sigprocmask(SIG_BLOCK, &stop_, &before_);
  }
  ~StopSignalsHeld() { sigprocmask(SIG_SETMASK, &before_, nullptr); }
  const sigset_t &before() const { return before_; }

 private:
  sigset_t stop_, before_;
};

struct Child {
  std::size_t item;
  int slot;
  FILE *report;  // the child's stdout (its --json summary)
  FILE *errors;  // the child's stderr
};

// A temporary file for a child's output (close-on-exec for the others; dup2 clears it for its own).
FILE *child_output() {
  FILE *f = std::tmpfile();
  if (!f) throw Failure(std::string("cannot create a temporary file: ") + std::strerror(errno));
  fcntl(fileno(f), F_SETFD, FD_CLOEXEC);
  return f;
}

// Starts `argv` with stdout and stderr into temporary files.
Child spawn(const std::vector<std::string> &argv, std::size_t item, int slot) {
  FILE *report = child_output(), *errors = child_output();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fileno(report), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fileno(errors), STDERR_FILENO);
  std::vector<char *> args;
  for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  const StopSignalsHeld held;
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setsigmask(&attributes, &held.before());
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    std::fclose(report);
    std::fclose(errors);
    throw Failure(argv[0] + ": cannot start: " + std::strerror(rc));
  }
  g_children[slot] = pid;
  return {item, slot, report, errors};
}

// What a child wrote to `f`; closes it.
std::string text_of(FILE *f) {
  std::string text;
  std::rewind(f);
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  return text;
}

// The values an item clipped: the sum of "clipped" over the outputs of its --json summary (which
// hpipe writes itself: a quote in a string is escaped, so the key cannot appear inside one).
std::int64_t clipped_in(const std::string &report) {
  const std::string key = "\"clipped\": ";
  std::int64_t clipped = 0;
  for (std::size_t at = report.find(key); at != std::string::npos; at = report.find(key, at + 1))
    clipped += std::strtoll(report.c_str() + at + key.size(), nullptr, 10);
  return clipped;
}

// The child's error line without the "hpipe: error: " prefix.
std::string error_of(FILE *errors, int status) {
  const std::string text = text_of(errors);
  std::string last;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    if (end > start) last = text.substr(start, end - start);
    start = end + 1;
  }
  const std::string prefix = "hpipe: error: ";
  if (last.rfind(prefix, 0) == 0) last = last.substr(prefix.size());
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status)) + (last.empty() ? "" : ": " + last);
  return last.empty() ? "exit status " + std::to_string(WEXITSTATUS(status)) : last;
}

// "INPUT: error", naming the input once (the item's own message often starts with it).
std::string about(const Item &item, const std::string &error) {
  return error.rfind(item.input + ":", 0) == 0 ? error : item.input + ": " + error;
}

struct Tally {
  std::int64_t done = 0, skipped = 0, clipped = 0;
  std::vector<Json> failures, clipped_items;
};

Tally run_here(Context &ctx, const Plan &plan, const std::vector<std::size_t> &todo, int workers, int threads) {
  Tally tally;
  const std::string exe = this_executable();
  std::deque<std::pair<std::size_t, int>> queue;  // (item, attempt)
  for (std::size_t i : todo) queue.emplace_back(i, 1);
  std::map<pid_t, std::pair<Child, int>> running;
  std::vector<int> free_slots;
  for (int s = workers - 1; s >= 0; s--) free_slots.push_back(s);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, stop_children_and_reraise);
  Progress progress(!ctx.quiet, "batch");
  std::optional<std::string> usage_error;
  while (!queue.empty() || !running.empty()) {
    while (!queue.empty() && !free_slots.empty() && !usage_error) {
      const auto [i, attempt] = queue.front();
      queue.pop_front();
      const Item &item = plan.items[i];
      OutputSet::remove_leftovers(item.output);
      std::vector<std::string> argv = {exe};
      argv.insert(argv.end(), plan.command.begin(), plan.command.begin() + 1);
      argv.insert(argv.end(), plan.passed.begin(), plan.passed.end());
      argv.insert(argv.end(), {"--output=" + item.output, "--json", "--threads=" + std::to_string(threads), "--",
                               plan.command[1], item.input});
      const int slot = free_slots.back();
      free_slots.pop_back();
      const Child c = spawn(argv, i, slot);
      running.emplace(static_cast<pid_t>(g_children[slot]), std::make_pair(c, attempt));
    }
    if (running.empty()) break;
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw Failure(std::string("waiting for the items: ") + std::strerror(errno));
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const auto [child, attempt] = it->second;
    running.erase(it);
    g_children[child.slot] = 0;
    free_slots.push_back(child.slot);
    const Item &item = plan.items[child.item];
    const std::string report = text_of(child.report);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      const std::string warnings = text_of(child.errors);  // its clipping warning, as a single call gives
      if (!ctx.quiet) std::fputs(warnings.c_str(), stderr);
      tally.done++;
      if (const std::int64_t clipped = clipped_in(report)) {
        tally.clipped += clipped;
        tally.clipped_items.push_back(
            Json().set("input", item.input).set("output", item.output).set("clipped", clipped));
      }
      ctx.note("done " + item.input + " -> " + item.output);
    } else {
      const std::string error = error_of(child.errors, status);
      if (WIFEXITED(status) && WEXITSTATUS(status) == 2 && std::filesystem::exists(item.output)) {
        // Its output was written by another run while it waited or ran (two batches on one
        // folder, a re-run while an interrupted run's items finish): the item is done.
        tally.skipped++;
        ctx.note("skipped " + item.input + ": " + item.output + " was written meanwhile");
      } else if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
        usage_error = error;  // the same for every item: stop starting new ones
      } else if (attempt < kAttempts) {
        ctx.warn(about(item, error) + " (retrying)");
        queue.emplace_back(child.item, attempt + 1);
      } else {
        std::fprintf(stderr, "hpipe: error: %s\n", about(item, error).c_str());
        tally.failures.push_back(Json().set("input", item.input).set("output", item.output).set("error", error));
      }
    }
    progress(static_cast<std::size_t>(tally.done) + tally.failures.size(), todo.size());
  }
  if (usage_error) throw UsageError(*usage_error);
  return tally;
}

// ---- Dask: the Python package runs the items as one-item shards of this same command ----

// `python -m hpipe.batch`, but a package that cannot be imported is one error line saying how to
// make it importable, not Python's traceback.
const char kRunBatchModule[] = R"(import runpy, sys
try:
    import hpipe
except ImportError as e:
    if not (e.name or "").startswith("hpipe"):
        raise
    sys.exit("hpipe: error: --scheduler needs the hpipe Python package, which %s cannot import (%s): "
             "build it (python3-dev, pybind11-dev) and put it on PYTHONPATH (from the source folder: "
             "PYTHONPATH=python:build/python), or install it (make install, then its site-packages on "
             "PYTHONPATH), or set HPIPE_PYTHON to a python3 that imports it" % (sys.executable, e))
runpy.run_module("hpipe.batch", run_name="__main__", alter_sys=True)
)";

[[noreturn]] void run_on_dask(const Context &ctx, const Plan &plan) {
  const char *python = env("HPIPE_PYTHON");
  std::vector<std::string> argv = {python ? python : HPIPE_PYTHON_EXECUTABLE,
                                   "-c",
                                   kRunBatchModule,
                                   "--scheduler",
                                   *ctx.value("--scheduler"),
                                   "--hpipe",
                                   this_executable()};
  if (ctx.json) argv.push_back("--json");
  if (ctx.quiet) argv.push_back("--quiet");
  argv.push_back("--");
  argv.insert(argv.end(), plan.command.begin(), plan.command.end());
  argv.insert(argv.end(), plan.passed.begin(), plan.passed.end());
  argv.insert(argv.end(), {"--output=" + plan.outdir, "--ext=" + plan.ext, "--"});
  argv.insert(argv.end(), plan.sources.begin(), plan.sources.end());
  std::vector<char *> args;
  for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(stdout);
  execvp(args[0], args.data());
  throw Failure(argv[0] + ": cannot start Python for --scheduler: " + std::strerror(errno) + " (set HPIPE_PYTHON)");
}

}  // namespace

int run_batch(Context &ctx) {
  const Plan plan = plan_of(ctx);
  if (ctx.has("--scheduler")) {
    if (ctx.has("--shard") || ctx.has("--workers") || ctx.has("--list"))
      throw UsageError("--scheduler: the Dask cluster runs every item; leave out --shard, --workers and --list");
    run_on_dask(ctx, plan);
  }
  const Shard shard = shard_of(ctx);
  std::vector<std::size_t> selected, todo;
  const auto first = static_cast<std::size_t>(shard.index), step = static_cast<std::size_t>(shard.count);
  for (std::size_t i = first; i < plan.items.size(); i += step) selected.push_back(i);
  const bool force = ctx.has("--force");
  for (std::size_t i : selected)
    if (force || !exists(plan.items[i].output)) todo.push_back(i);
  ctx.summary.set("command", plan.command[0] + " " + plan.command[1]);
  ctx.summary.set("items", static_cast<std::int64_t>(plan.items.size()));
  ctx.summary.set("shard", std::to_string(shard.index) + "/" + std::to_string(shard.count));
  ctx.summary.set("selected", static_cast<std::int64_t>(selected.size()));

  if (ctx.has("--list")) {
    std::vector<Json> listed;
    for (std::size_t i : selected) {
      const Item &item = plan.items[i];
      const bool complete = exists(item.output);
      listed.push_back(Json().set("index", static_cast<std::int64_t>(i)).set("input", item.input));
      listed.back().set("output", item.output).set("complete", complete);
      ctx.say(std::string(complete ? "complete " : "pending  ") + item.input + " -> " + item.output);
    }
    ctx.summary.set("list", listed);
    return 0;
  }

  const int cores = usable_cores();
  const std::int64_t all_at_once = std::clamp<std::int64_t>(std::int64_t(todo.size()), 1, cores);
  const int workers = static_cast<int>(ctx.integer("--workers", all_at_once, 1, kMaxWorkers));
  const int threads = static_cast<int>(ctx.integer("--threads", std::max(1, cores / workers), 1, 1024));
  if (workers * threads > cores)
    ctx.warn(std::to_string(workers) + " workers x " + std::to_string(threads) + " threads oversubscribe the " +
             std::to_string(cores) + " cores");
  const auto t0 = std::chrono::steady_clock::now();
  const Tally tally = ctx.timed("compute", [&] { return run_here(ctx, plan, todo, workers, threads); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::int64_t skipped = static_cast<std::int64_t>(selected.size() - todo.size()) + tally.skipped;
  const std::int64_t failed = static_cast<std::int64_t>(tally.failures.size());
  const double rate = seconds > 0 ? double(tally.done) / seconds : 0;
  ctx.summary.set("done", tally.done).set("skipped", skipped).set("failed", failed).set("failures", tally.failures);
  ctx.summary.set("clipped", tally.clipped).set("clipped_items", tally.clipped_items);
  ctx.summary.set("workers", workers)
      .set("threads_per_worker", threads)
      .set("seconds", seconds)
      .set("items_per_s", rate);
  char line[160];
  std::snprintf(line, sizeof line, "%lld done, %lld skipped, %lld failed in %.2f s (%.3g items/s)",
                (long long)tally.done, (long long)skipped, (long long)failed, seconds, rate);
  ctx.say("batch " + plan.command[0] + " " + plan.command[1] + ", " + std::to_string(selected.size()) + " of " +
          std::to_string(plan.items.size()) + " items (shard " + std::to_string(shard.index) + "/" +
          std::to_string(shard.count) + "), " + std::to_string(workers) + " workers x " + std::to_string(threads) +
          " threads: " + line +
          (tally.clipped ? "; " + std::to_string(tally.clipped) + " values clipped in " +
                               std::to_string(tally.clipped_items.size()) + " items"
                         : ""));
  return failed ? 1 : 0;
}

}  // namespace hpipe::cli
