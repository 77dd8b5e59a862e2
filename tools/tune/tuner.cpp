// CPU tuning in-process: variants compiled with the JIT in parallel, verified against the
// reference on random data, timed one at a time with Halide's adaptive benchmark rule.
#include "tools/tune/tuner.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "halide_benchmark.h"
#include "runtime/src/environment.h"
#include "runtime/src/thread_pool.h"

namespace hpipe::tune {

using Clock = std::chrono::steady_clock;

std::vector<TunableOp> &registry() {
  static std::vector<TunableOp> ops;
  return ops;
}

Registrar::Registrar(std::vector<TunableOp> (*family)()) {
  for (auto &op : family()) registry().push_back(std::move(op));
}

const TunableOp &find_op(const std::string &name) {
  for (const auto &op : registry())
    if (op.name == name) return op;
  std::string known;
  for (const auto &op : registry()) known += " " + op.name;
  throw std::invalid_argument("unknown op '" + name + "' (known:" + known + ")");
}

std::vector<const TunableOp *> select_ops(const std::vector<std::string> &names) {
  std::vector<const TunableOp *> out;
  if (names.empty()) {
    for (const auto &op : registry()) out.push_back(&op);
  } else {
    for (const auto &name : names) out.push_back(&find_op(name));
  }
  return out;
}

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown CPU";
}

// The library's thread count (its rule: runtime/src/environment.h), so that a variant is timed on
// the threads the library will use and records are kept apart by that count.
int halide_threads() { return detail::default_thread_count(); }

// The cores this process may run on (its affinity mask, which containers and taskset narrow).
int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// The JIT pipelines' parallel loops in the library's pool (runtime/src/thread_pool.h), on
// halide_threads() threads, so that a variant is timed as the library would run it.
int run_jit_task(void *user_context, halide_task_t task, int index, std::uint8_t *closure) {
  return task(user_context, index, closure);
}
int jit_do_par_for(Halide::JITUserContext *user_context, int (*task)(Halide::JITUserContext *, int, std::uint8_t *),
                   int min, int size, std::uint8_t *closure) {
  static const int threads = halide_threads();
  return detail::run_parallel_loop(run_jit_task, user_context, reinterpret_cast<halide_task_t>(task), min, size,
                                   closure, threads);
}

std::string join_knobs(const KnobSpace &space, const std::vector<int> &values) {
  std::vector<sched::KnobSetting> settings;
  for (std::size_t i = 0; i < values.size(); i++) settings.push_back({space.names[i], values[i]});
  return sched::join_knobs(settings);
}

std::vector<int> knob_values(const KnobSpace &space, const std::string &text) {
  std::vector<int> values(space.names.size());
  for (const auto &setting : sched::split_knobs(text))
    for (std::size_t i = 0; i < space.names.size(); i++)
      if (setting.name == space.names[i]) values[i] = setting.value;
  return values;
}

// Knob texts that change one knob of `text` to a neighbouring candidate.
std::vector<std::string> neighbours(const KnobSpace &space, const std::string &text) {
  std::vector<std::string> out;
  const auto values = knob_values(space, text);
  for (std::size_t i = 0; i < values.size(); i++) {
    const auto &c = space.candidates[i];
    const auto at = std::find(c.begin(), c.end(), values[i]) - c.begin();
    for (auto j : {at - 1, at + 1}) {
      if (j < 0 || j >= static_cast<long>(c.size())) continue;
      auto next = values;
      next[i] = c[j];
      const std::string t = join_knobs(space, next);
      if (space.valid(t)) out.push_back(t);
    }
  }
  return out;
}

struct Variant {
  std::string scheduler = "knobs", knobs;
};

// A case's data as Halide buffers (inputs keep their strides), and the outputs to fill (one per
// Tuple element).
struct Prepared {
  const Case *c = nullptr;
  std::vector<std::vector<float>> storage;
  std::map<std::string, Halide::Buffer<float>> buffers;
  std::map<std::string, int> ints;
  std::map<std::string, float> reals;
  std::vector<Halide::Buffer<void>> outputs;

  explicit Prepared(const Case &k) : c(&k) {
    for (const auto &extents : k.output_buffers()) outputs.push_back(Halide::Buffer<float>(extents));
    storage.reserve(k.inputs.size());
    for (const Arg &a : k.inputs) {
      if (!a.is_buffer) {
        if (a.is_float) {
          reals[a.name] = a.real;
        } else {
          ints[a.name] = a.scalar;
        }
        continue;
      }
      storage.emplace_back(a.values.begin(), a.values.end());
      std::vector<halide_dimension_t> dims;
      for (std::size_t d = 0; d < a.extents.size(); d++) dims.push_back({0, a.extents[d], a.strides[d], 0});
      buffers.emplace(a.name, Halide::Buffer<float>(storage.back().data(), int(dims.size()), dims.data(), a.name));
    }
  }
};

struct Compiled {
  Variant variant;
  Built built;
  Halide::Pipeline pipeline;  // of built's outputs, JIT-compiled
  std::string error;
  double compile_s = 0;
  bool started = false;  // false: not compiled, the budget would not allow it
};

struct Measured {
  std::string status = "ok", error;
  double max_error = 0, time_ms = 0;
  std::uint64_t samples = 0, iterations = 0;
};

class CpuTuner {
 public:
  CpuTuner(const TunableOp &op, const TuneOptions &o, const Context &ctx)
      : op_(op), o_(o), ctx_(ctx), target_(ctx.target) {}

  void run(Clock::time_point deadline, std::vector<Record> &db) {
    deadline_ = deadline;
    // --resume: what this context already measured counts as done; otherwise tuning starts afresh.
    if (o_.resume)
      for (const Record &r : latest_of_context(db, context_record()))
        if (r.op == op_.name && r.shape == shape()) known_[r.key()] = r;
    std::cerr << "hpipe-tune: " << op_.name << " (" << shape() << ")\n";

    const auto space = enumerate(op_.cpu);
    std::string strategy = o_.strategy;
    if (strategy == "auto") strategy = int(space.size()) <= o_.max_variants ? "exhaustive" : "random+greedy";
    planned_ = std::min<int>(o_.max_variants, int(space.size())) + (o_.autoschedulers ? 2 : 0) + o_.inject_wrong;

    // The default always (the baseline of the report); the autoschedulers, which take seconds to
    // compile, only within the budget.
    std::vector<Variant> first = {{"knobs", op_.cpu.defaults}};
    if (o_.inject_wrong) first.push_back({"test-corrupt", op_.cpu.defaults});
    run_batch(first, true);
    if (o_.autoschedulers && !out_of_time()) run_batch({{"Adams2019", ""}, {"Mullapudi2016", ""}});

    std::vector<std::string> order = space;
    std::mt19937 rng(o_.seed);
    if (strategy != "exhaustive") std::shuffle(order.begin(), order.end(), rng);
    if (strategy == "exhaustive" || strategy == "random") {
      offer(order, o_.max_variants);
    } else {
      if (strategy == "random+greedy") offer(order, std::max(1, o_.max_variants / 2));
      greedy();
    }
    confirm();
    if (o_.progress) std::cerr << "\n";
    int failed = 0, wrong = 0;
    for (const auto &[key, r] : known_) failed += r.status == "failed", wrong += r.status == "wrong";
    const Record *best = best_knobs();
    std::cerr << "hpipe-tune: " << op_.name << ": " << measured_ << " measured, " << resumed_ << " resumed, " << failed
              << " failed, " << wrong << " discarded (wrong results)";
    if (best) std::cerr << "; best knobs " << best->knobs << " " << best->time_ms << " ms";
    std::cerr << "\n";
  }

 private:
  std::string shape() const { return cases().front().shape; }
  const std::vector<Case> &cases() const {
    if (!cases_) {
      cases_ = std::make_unique<std::vector<Case>>(op_.cases(o_.size, o_.seed));
      for (const Case &c : *cases_) prepared_.emplace_back(c);
    }
    return *cases_;
  }

  Record context_record() const {
    Record r;
    r.backend = "cpu", r.machine = ctx_.machine, r.target = ctx_.target, r.threads = ctx_.threads;
    return r;
  }

  Record record_of(const Variant &v) const {
    Record r = context_record();
    r.op = op_.name, r.shape = shape(), r.scheduler = v.scheduler;
    r.knobs = v.scheduler == "knobs" ? v.knobs : (v.scheduler == "test-corrupt" ? v.knobs : "");
    r.is_default = v.scheduler == "knobs" && v.knobs == op_.cpu.defaults;
    return r;
  }

  int knob_variants_seen() const {
    int n = 0;
    for (const auto &[key, r] : known_) n += r.scheduler == "knobs";
    return n;
  }
  // Whether work of `next_s` seconds started now would leave the confirm step too little time for
  // its re-measurements: the search stops early enough that the op ends by its deadline.
  bool out_of_time(double next_s = 0) const {
    const double confirm_s = measured_ ? kConfirmed * measuring_s_ / measured_ : 0;
    return Clock::now() +
               std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(next_s + confirm_s)) >=
           deadline_;
  }

  // Offers knob texts in order until `limit` knob variants are known, in batches.
  void offer(const std::vector<std::string> &texts, int limit) {
    std::vector<Variant> batch;
    for (const auto &t : texts) {
      if (knob_variants_seen() + int(batch.size()) >= std::min(limit, o_.max_variants) || out_of_time()) break;
      if (seen_this_run_.count(t)) continue;
      batch.push_back({"knobs", t});
      if (int(batch.size()) >= batch_size()) run_batch(batch), batch.clear();
    }
    if (!batch.empty()) run_batch(batch);
  }

  // From the best knobs so far, tries every one-knob neighbour; moves to the best; repeats.
  void greedy() {
    while (!out_of_time() && knob_variants_seen() < o_.max_variants) {
      const Record *best = best_knobs();
      if (!best) return;
      const std::string from = best->knobs;
      std::vector<std::string> untried;
      for (const auto &t : neighbours(op_.cpu, from))
        if (!seen_this_run_.count(t)) untried.push_back(t);
      if (untried.empty()) return;
      offer(untried, o_.max_variants);
      if (best_knobs()->knobs == from) return;  // no neighbour is faster: a local optimum
    }
  }

  int batch_size() const { return std::max(4, 2 * o_.jobs); }

  const Record *best_knobs() const {
    const Record *best = nullptr;
    for (const auto &[key, r] : known_)
      if (r.scheduler == "knobs" && r.verified() && (!best || r.time_ms < best->time_ms)) best = &r;
    return best;
  }

  Compiled compile(const Variant &v) const {
    Compiled c;
    c.variant = v, c.started = true;
    const auto t0 = Clock::now();
    try {
      c.built = build_variant(op_, target_, v.scheduler, v.knobs, ctx_.threads);
      c.pipeline = c.built.pipeline();
      c.pipeline.jit_handlers().custom_do_par_for = jit_do_par_for;
      c.pipeline.compile_jit(target_);
    } catch (const std::exception &e) {
      c.error = e.what();
    }
    c.compile_s = std::chrono::duration<double>(Clock::now() - t0).count();
    return c;
  }

  void bind(const Built &b, const Prepared &p) const {
    for (auto param : b.buffers) param.set(p.buffers.at(param.name()));
    for (auto param : b.scalars) param.set(p.ints.at(param.name()));
    for (auto param : b.reals) param.set(p.reals.at(param.name()));
  }

  void realize(const Compiled &c, Prepared &p) const {
    Halide::Pipeline pipeline = c.pipeline;
    Halide::Realization outputs(p.outputs);
    pipeline.realize(outputs, target_);
  }

  Measured measure(const Compiled &c) {
    Measured m;
    const Case *running = nullptr;  // named in a failure's message
    try {
      // Verify every case (NaN-poisoned output), timing case last so it is also the warm-up.
      for (std::size_t i = prepared_.size(); i-- > 0;) {
        Prepared &p = prepared_[i];
        running = p.c;
        bind(c.built, p);
        // Dense (made from extents), so filled directly: Halide 14's Buffer::fill reads an uninitialised
        // stride when it merges dimensions (for_each_value_prep), which UBSan reports as pointer overflow.
        for (Halide::Buffer<float> out : p.outputs)
          std::fill_n(out.data(), out.number_of_elements(), std::numeric_limits<float>::quiet_NaN());
        realize(c, p);
        check(p, m);
        if (m.status != "ok") return m;
      }
      Prepared &timing = prepared_.front();
      Halide::Tools::BenchmarkConfig config;
      config.min_time = o_.min_time;
      config.max_time = 4 * o_.min_time;
      const auto result = Halide::Tools::benchmark([&] { realize(c, timing); }, config);
      m.time_ms = result.wall_time * 1e3, m.samples = result.samples, m.iterations = result.iterations;
    } catch (const std::exception &e) {
      m.status = "failed", m.error = std::string("run: ") + (running ? "at " + running->shape + ": " : "") + e.what();
    }
    return m;
  }

  void check(const Prepared &p, Measured &m) const {
    const Case &k = *p.c;
    std::vector<float> got;  // the Tuple elements one after another, as `expected`
    for (Halide::Buffer<float> out : p.outputs) got.insert(got.end(), out.begin(), out.end());
    std::size_t bad = 0, worst = 0;
    double worst_ratio = 0;
    const double inf = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < k.expected.size(); i++) {
      const double limit = op_.tolerance.limit(k.expected[i]);
      const double err = std::abs(double(got[i]) - k.expected[i]);
      const bool ok = err <= limit;  // false for NaN
      const double ratio = std::isnan(err) ? inf : limit > 0 ? err / limit : ok ? 0 : inf;
      bad += !ok;
      if (ratio > worst_ratio) worst_ratio = ratio, worst = i;
    }
    m.max_error = std::max(m.max_error, std::isinf(worst_ratio) ? 1e300 : worst_ratio);
    if (bad) {
      std::ostringstream s;
      s << bad << " of " << k.expected.size() << " elements out of tolerance (abs " << op_.tolerance.abs << ", rel "
        << op_.tolerance.rel << ") at " << k.shape << "; worst at flat index " << worst << ": got " << got[worst]
        << ", expected " << k.expected[worst];
      m.status = "wrong", m.error = s.str();
    }
  }

  // Compiles the batch in parallel (o_.jobs threads), then measures its variants one at a time.
  // Unless `required` (the default, the report's baseline), no compile or measurement starts that
  // would end past the deadline, as the ones before took; those variants stay unmeasured.
  void run_batch(const std::vector<Variant> &batch, bool required = false) {
    std::vector<Variant> todo;
    for (const auto &v : batch) {
      if (v.scheduler == "knobs") seen_this_run_.insert(v.knobs);
      const std::string key = record_of(v).key();
      if (o_.resume && known_.count(key)) {
        resumed_++;
        tick(v, &known_[key], "resumed");
        continue;
      }
      todo.push_back(v);
    }
    if (o_.progress && isatty(2) && !todo.empty())
      std::cerr << "\r  compiling " << todo.size() << " variants (-j " << o_.jobs << ")...\033[K" << std::flush;
    std::vector<Compiled> compiled(todo.size());
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> workers;
    const double compile_s = compiled_ ? compiling_s_ / compiled_ : 0;
    for (int j = 0; j < std::min<int>(o_.jobs, int(todo.size())); j++)
      workers.emplace_back([&] {
        for (std::size_t i; (i = next++) < todo.size();)
          if (required || !out_of_time(compile_s)) compiled[i] = compile(todo[i]);
      });
    for (auto &w : workers) w.join();
    for (const Compiled &c : compiled)
      if (c.started) compiling_s_ += c.compile_s, compiled_++;
    cases();  // data made before timing starts
    for (const Compiled &c : compiled) {
      if (!c.started || (!required && out_of_time(measured_ ? measuring_s_ / measured_ : 0))) continue;
      Record r = record_of(c.variant);
      r.compile_s = c.compile_s;
      if (!c.error.empty()) {
        r.status = "failed", r.error = "compile: " + c.error;
      } else {
        const auto t0 = Clock::now();
        const Measured m = measure(c);
        measuring_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
        r.status = m.status, r.error = m.error, r.max_error = m.max_error, r.time_ms = m.time_ms;
        r.samples = m.samples, r.iterations = m.iterations;
      }
      r.when = utc_now();
      append_record(o_.db, r);
      known_[r.key()] = r;
      measured_++;
      tick(c.variant, &known_[r.key()], r.status);
      if (r.verified() && c.variant.scheduler == "knobs") verified_.emplace(c.variant.knobs, c);
    }
  }

  // Re-measures the three best knob variants and the default back to back, so that the winner and
  // the speedup over the default come from measurements taken under the same conditions; the
  // database keeps their new times. Within the op's deadline: what is left is not re-measured.
  void confirm() {
    std::vector<Record> best;
    for (const auto &[key, r] : known_)
      if (r.verified() && r.scheduler == "knobs") best.push_back(r);
    std::sort(best.begin(), best.end(), [](auto &a, auto &b) { return a.time_ms < b.time_ms; });
    // The default takes the last place, unless it is among the fastest already, or has no verified
    // latest record (then there is none to re-measure).
    const auto def = std::find_if(best.begin(), best.end(), [](const Record &r) { return r.is_default; });
    const auto last = std::ptrdiff_t(kConfirmed) - 1;
    if (def != best.end() && def - best.begin() > last) std::iter_swap(best.begin() + last, def);
    best.resize(std::min<std::size_t>(best.size(), kConfirmed));
    for (const Record &old : best) {
      if (Clock::now() >= deadline_) {
        std::cerr << "hpipe-tune: " << op_.name << ": --budget spent, not every best variant re-measured\n";
        return;
      }
      const auto kept = verified_.find(old.knobs);
      const Compiled c = kept != verified_.end() ? kept->second : compile({"knobs", old.knobs});
      if (!c.error.empty()) continue;
      Record r = old;
      const Measured m = measure(c);
      r.status = m.status, r.error = m.error, r.max_error = m.max_error, r.time_ms = m.time_ms;
      r.samples = m.samples, r.iterations = m.iterations, r.compile_s = c.compile_s;
      r.phase = "confirm", r.when = utc_now();
      append_record(o_.db, r);
      known_[r.key()] = r;
    }
  }

  void tick(const Variant &v, const Record *r, const std::string &what) {
    done_++;
    if (!o_.progress) return;
    const int width = 30, total = std::max(planned_, done_);
    const int filled = width * done_ / total;
    const Record *best = best_knobs();
    std::ostringstream line;
    line << "\r  [" << std::string(filled, '#') << std::string(width - filled, '.') << "] " << done_ << "/" << total
         << "  " << std::setw(8) << what << " " << (v.scheduler == "knobs" ? v.knobs : v.scheduler);
    if (r && r->verified()) line << " " << std::fixed << std::setprecision(3) << r->time_ms << " ms";
    if (best) line << "  | best " << std::fixed << std::setprecision(3) << best->time_ms << " ms";
    std::string s = line.str();
    if (isatty(2)) {
      std::cerr << s << "\033[K" << std::flush;
    } else {
      std::cerr << s.substr(1) << "\n";
    }
  }

  const TunableOp &op_;
  const TuneOptions &o_;
  Context ctx_;
  Halide::Target target_;
  Clock::time_point deadline_;
  mutable std::unique_ptr<std::vector<Case>> cases_;
  mutable std::vector<Prepared> prepared_;
  std::map<std::string, Record> known_;  // key -> latest record (this context and shape)
  std::set<std::string> seen_this_run_;
  std::map<std::string, Compiled> verified_;  // knobs -> compiled, for the re-measurement
  int planned_ = 0, done_ = 0, resumed_ = 0, measured_ = 0;
  double measuring_s_ = 0;                      // in measure(), for out_of_time()'s estimate
  double compiling_s_ = 0;                      // in compile() by run_batch's workers, and
  int compiled_ = 0;                            // how many: out_of_time()'s estimate of a compile
  static constexpr std::size_t kConfirmed = 4;  // variants confirm() re-measures
};

}  // namespace

Built build_variant(const TunableOp &op, const Halide::Target &target, const std::string &scheduler,
                    const std::string &knobs, int threads) {
  if (scheduler == "knobs") return op.build(target, &knobs);
  if (scheduler == "test-corrupt") {
    // A deliberately wrong variant: the knobs' schedule, then an update that puts the first element
    // off by about 0.1%. The output stays the pipeline's output, which schedules may rely on (a
    // cube output is cut into tasks by its own extents).
    Built built = op.build(target, &knobs);
    const std::vector<Halide::Expr> first(built.output.dimensions(), Halide::Expr(0));
    std::vector<Halide::Expr> values;
    for (int i = 0; i < built.output.outputs(); i++) {
      Halide::Expr v = built.output.outputs() == 1 ? Halide::Expr(built.output(first)) : built.output(first)[i];
      values.push_back(v * 1.001f + 0.001f);
    }
    built.output(first) = Halide::Tuple(values);
    return built;
  }
  Built built = op.build(target, nullptr);
  built.pipeline().auto_schedule(scheduler, target, Halide::MachineParams(threads, 32 << 20, 40));
  return built;
}

std::vector<std::string> enumerate(const KnobSpace &space) {
  std::vector<std::string> out;
  std::vector<std::size_t> at(space.names.size(), 0);
  while (true) {
    std::vector<int> values;
    for (std::size_t i = 0; i < at.size(); i++) values.push_back(space.candidates[i][at[i]]);
    const std::string text = join_knobs(space, values);
    if (space.valid(text)) out.push_back(text);
    std::size_t i = 0;
    for (; i < at.size(); i++) {
      if (++at[i] < space.candidates[i].size()) break;
      at[i] = 0;
    }
    if (i == at.size()) return out;
  }
}

Context host_context(const std::string &target) {
  Context c;
  c.machine = cpu_model();
  c.target = (target.empty() ? Halide::get_host_target() : Halide::Target(target)).to_string();
  c.threads = halide_threads();
  return c;
}

void check_jit_target(const std::string &text) {
  if (text.empty()) return;
  if (!Halide::Target::validate_target_string(text))
    throw std::invalid_argument("--target: expected a Halide target such as host or host-avx2, got '" + text + "'");
  const Halide::Target host = Halide::get_host_target(), target(text);
  if (target.arch != host.arch || target.bits != host.bits || target.os != host.os)
    throw std::invalid_argument("--target: tune runs the variants here (JIT), so it takes this host's " +
                                Halide::Target(host.os, host.arch, host.bits).to_string() +
                                " (with any of its CPU features), got '" + text +
                                "'; tune on that machine, or measure a bundle there (hpipe-tune bundle --target)");
  if (target.get_required_device_api() != Halide::DeviceAPI::None || target.has_feature(Halide::Target::HVX))
    throw std::invalid_argument("--target: tune measures CPU schedules, got the device target '" + text +
                                "'; GPU schedules are measured by a bundle (hpipe-tune bundle --target)");
  // An instruction set the processor lacks would stop the process on its first instruction.
  using F = Halide::Target::Feature;
  for (F feature : {F::SSE41, F::AVX, F::AVX2, F::FMA, F::FMA4, F::F16C, F::AVX512, F::AVX512_KNL, F::AVX512_Skylake,
                    F::AVX512_Cannonlake, F::AVX512_SapphireRapids, F::VSX, F::POWER_ARCH_2_07, F::ARMv7s, F::ARMv81a,
                    F::ARMDotProd, F::ARMFp16, F::SVE, F::SVE2})
    if (target.has_feature(feature) && !host.has_feature(feature))
      throw std::invalid_argument("--target: '" + text + "' uses " + Halide::Target::feature_to_name(feature) +
                                  " instructions, which this processor (" + host.to_string() + ") lacks");
}

std::vector<Record> usable_records(const std::vector<Record> &records, const std::string &db) {
  std::vector<Record> out;
  for (const Record &r : records) {
    const auto op =
        std::find_if(registry().begin(), registry().end(), [&](const TunableOp &o) { return o.name == r.op; });
    if (op != registry().end() && (r.scheduler == "knobs" || r.scheduler == "test-corrupt")) {
      const std::string why = (r.backend == "cpu" ? op->cpu : op->cuda).problem(r.knobs);
      if (!why.empty()) {
        std::cerr << "hpipe-tune: " << db << ":" << r.line << ": skipped, knobs '" << r.knobs << "' of " << r.op
                  << " on " << r.backend << " are not this build's: " << why << "\n";
        continue;
      }
    }
    out.push_back(r);
  }
  return out;
}

std::vector<Record> latest_of_context(const std::vector<Record> &records, const Record &where) {
  std::map<std::string, std::size_t> latest;
  std::vector<std::string> order;
  for (std::size_t i = 0; i < records.size(); i++) {
    if (!records[i].same_context(where)) continue;
    const std::string key = records[i].key();
    if (!latest.count(key)) order.push_back(key);
    latest[key] = i;
  }
  std::vector<Record> out;
  for (const auto &key : order) out.push_back(records[latest[key]]);
  return out;
}

int tune(const TuneOptions &options) {
  check_jit_target(options.target);
  const auto ops = select_ops(options.ops);
  TuneOptions o = options;
  // Compiles beyond the cores share them: each takes longer than the estimate out_of_time() makes
  // from those before, and the budget was overrun (-j 8 on 2 cores: 50 s of a 20 s budget).
  if (const int cores = usable_cores(); o.jobs > cores) {
    std::cerr << "hpipe-tune: -j " << o.jobs << " is more than the " << cores << " cores: compiling " << cores
              << " variants at a time, so that --budget holds\n";
    o.jobs = cores;
  }
  const Context ctx = host_context(o.target);
  std::cerr << "hpipe-tune: " << ctx.machine << ", target " << ctx.target << ", " << ctx.threads
            << " threads; database " << o.db << (o.resume ? " (resume)" : "") << "\n";
  if (o.autoschedulers) {
    // Halide 14's autoschedulers are plugins; Adams2019's cost-model weights are built into it.
    // Its beam search takes minutes per op at its default beam of 32: greedy (beam 1, one pass)
    // unless the user sets HL_BEAM_SIZE / HL_NUM_PASSES.
    setenv("HL_BEAM_SIZE", "1", 0);
    setenv("HL_NUM_PASSES", "1", 0);
    Halide::load_plugin(HPIPE_ADAMS2019_PLUGIN);
    Halide::load_plugin(HPIPE_MULLAPUDI2016_PLUGIN);
  }
  const auto start = Clock::now();
  std::string skipped;
  for (std::size_t i = 0; i < ops.size(); i++) {
    // Each op gets an equal share of what is left of the budget; none starts once it is spent.
    const double left = o.budget_s - std::chrono::duration<double>(Clock::now() - start).count();
    if (left <= 0) {
      skipped += (skipped.empty() ? "" : ", ") + ops[i]->name;
      continue;
    }
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(left / double(ops.size() - i)));
    // --resume reads what this context measured; records this build cannot read are skipped, named.
    auto db = o.resume ? usable_records(load_records(o.db), o.db) : std::vector<Record>{};
    CpuTuner(*ops[i], o, ctx).run(deadline, db);
  }
  if (!skipped.empty()) std::cerr << "hpipe-tune: --budget spent; not tuned: " << skipped << "\n";
  print_report(load_records(o.db), std::cout);
  return 0;
}

void print_report(const std::vector<Record> &records, std::ostream &out) {
  // Contexts in order of first appearance; within each, ops and shapes.
  std::vector<Record> contexts;
  for (const Record &r : records)
    if (std::none_of(contexts.begin(), contexts.end(), [&](const Record &c) { return c.same_context(r); }))
      contexts.push_back(r);
  for (const Record &ctx : contexts) {
    out << "\n" << ctx.backend << " on " << ctx.machine << " | " << ctx.target;
    if (ctx.backend == "cpu") out << " | " << ctx.threads << " threads";
    out << "\n";
    out << std::left << std::setw(21) << "op" << std::setw(36) << "shape" << std::right << std::setw(11) << "default ms"
        << std::setw(10) << "best ms" << std::setw(9) << "speedup" << std::setw(7) << "tried" << std::setw(8)
        << "failed" << std::setw(10) << "discarded"
        << "  winner\n";
    const auto latest = latest_of_context(records, ctx);
    std::vector<std::pair<std::string, std::string>> groups;
    for (const Record &r : latest)
      if (std::find(groups.begin(), groups.end(), std::make_pair(r.op, r.shape)) == groups.end())
        groups.push_back({r.op, r.shape});
    for (const auto &[op, shape] : groups) {
      const Record *def = nullptr, *best = nullptr, *best_knobs = nullptr;
      int tried = 0, failed = 0, wrong = 0;
      for (const Record &r : latest) {
        if (r.op != op || r.shape != shape || r.scheduler == "test-corrupt") continue;
        tried++;
        failed += r.status == "failed", wrong += r.status == "wrong";
        if (!r.verified()) continue;
        if (r.is_default) def = &r;
        if (!best || r.time_ms < best->time_ms) best = &r;
        if (r.scheduler == "knobs" && (!best_knobs || r.time_ms < best_knobs->time_ms)) best_knobs = &r;
      }
      for (const Record &r : latest)
        if (r.op == op && r.shape == shape && r.scheduler == "test-corrupt") tried++, wrong += r.status == "wrong";
      out << std::left << std::setw(21) << op << std::setw(36) << shape << std::right << std::fixed
          << std::setprecision(3) << std::setw(11) << (def ? def->time_ms : NAN) << std::setw(10)
          << (best ? best->time_ms : NAN) << std::setw(8) << std::setprecision(2)
          << (def && best ? def->time_ms / best->time_ms : NAN) << "x" << std::setw(7) << tried << std::setw(8)
          << failed << std::setw(10) << wrong << "  ";
      if (best) out << (best->scheduler == "knobs" ? best->knobs : best->scheduler);
      if (best && best_knobs && best != best_knobs)
        out << " (not exportable; best knobs " << best_knobs->knobs << " " << std::setprecision(3)
            << best_knobs->time_ms << " ms)";
      out << "\n";
    }
  }
}

std::string knobs_json(
    const std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> &kernels,
    const std::string &comment) {
  std::ostringstream out;
  out << "{\n  \"format\": \"hpipe-knobs/1\",\n  \"comment\": " << json_quote(comment) << ",\n  \"kernels\": {";
  const char *op_sep = "\n";
  for (const auto &[op, backends] : kernels) {
    out << op_sep << "    " << json_quote(op) << ": {";
    const char *be_sep = "\n";
    for (const auto &[backend, text] : backends) {
      out << be_sep << "      " << json_quote(backend) << ": {";
      const char *sep = "";
      for (const auto &setting : sched::split_knobs(text)) {
        out << sep << json_quote(setting.name) << ": " << setting.value;
        sep = ", ";
      }
      out << "}";
      be_sep = ",\n";
    }
    out << "\n    }";
    op_sep = ",\n";
  }
  out << "\n  }\n}\n";
  return out.str();
}

std::string defaults_json() {
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> kernels;
  for (const auto &op : registry())
    kernels.push_back({op.name, {{"cpu", op.cpu.defaults}, {"cuda", op.cuda.defaults}}});
  return knobs_json(kernels,
                    "The C++ defaults of every tunable kernel's knobs, written by `hpipe-tune defaults`; "
                    "the configure step checks HPIPE_TUNING_FILE against these names.");
}

}  // namespace hpipe::tune
