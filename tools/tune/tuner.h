// hpipe-tune's commands over the registry (tunable.h) and the results database (records.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/tune/records.h"
#include "tools/tune/tunable.h"

namespace hpipe::tune {

struct TuneOptions {
  std::vector<std::string> ops;  // empty: every registered op
  std::string db = "hpipe-tune.jsonl";
  std::string strategy = "auto";  // auto, exhaustive, random, greedy
  double budget_s = 600;          // for the whole run, shared out among the ops
  int max_variants = 64;          // knob variants per op (the default included)
  int jobs = 2;                   // variants compiled in parallel (measured one at a time)
  bool resume = false;            // skip variants the database already has for this context
  bool autoschedulers = true;     // also try Adams2019 and Mullapudi2016
  bool inject_wrong = false;      // test hook: add a variant with a corrupted output
  Size size = Size::workload;
  std::string target;     // Halide target; empty: the host's
  double min_time = 0.1;  // seconds of timed samples per variant (Halide's adaptive rule)
  std::uint32_t seed = 1;
  bool progress = true;
};

// The context records are kept apart by: CPU model, Halide target, thread count.
struct Context {
  std::string machine, target;
  int threads = 0;
};
Context host_context(const std::string &target);
// tune's --target ("" is the host's): the variants run in this process, so a target of another
// architecture, bit width or OS, a GPU target or an instruction set this processor lacks is an
// error (std::invalid_argument), before anything is compiled.
void check_jit_target(const std::string &target);

// `records` (of database `db`) less those whose knobs this build cannot read (another version's,
// or edited by hand), each named with its file and line on stderr: --resume and export would
// fail on them.
std::vector<Record> usable_records(const std::vector<Record> &records, const std::string &db);

const TunableOp &find_op(const std::string &name);  // throws std::invalid_argument
std::vector<const TunableOp *> select_ops(const std::vector<std::string> &names);

// Every valid knob text of a space, in odometer order over the candidates.
std::vector<std::string> enumerate(const KnobSpace &space);

// One variant's pipeline: scheduler "knobs" (the op's schedule with `knobs`), an autoscheduler
// ("Adams2019", "Mullapudi2016"; plugins loaded) or "test-corrupt" (the knobs' schedule with a wrong
// first element, to prove verification works).
Built build_variant(const TunableOp &op, const Halide::Target &target, const std::string &scheduler,
                    const std::string &knobs, int threads);

int tune(const TuneOptions &options);

// Per op and backend of one context: default vs best, speedup, variants tried/failed/discarded.
void print_report(const std::vector<Record> &records, std::ostream &out);

// The latest record of every variant whose context is `where`'s (backend, machine, target, threads).
std::vector<Record> latest_of_context(const std::vector<Record> &records, const Record &where);

// {"format": ..., "kernels": {op: {backend: {knob: value}}}}
std::string knobs_json(
    const std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> &kernels,
    const std::string &comment);
std::string defaults_json();

}  // namespace hpipe::tune
