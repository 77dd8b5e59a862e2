// The results database: one JSON object per line, appended, never rewritten. A record is one
// measurement of one variant; records of other machines, targets or thread counts stay in the file
// but are never mixed with the current ones (same_context()).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tools/json_quote.h"

namespace hpipe::tune {

struct Record {
  std::string op, type = "f32", backend;  // backend: cpu or cuda
  std::string shape;                      // the timing problem
  std::string target;                     // Halide target string the variant was compiled for
  std::string machine;                    // CPU model (cpu) or GPU name (cuda)
  int threads = 0;                        // CPU threads of the Halide thread pool (0 on cuda)
  std::string scheduler = "knobs";        // knobs, Adams2019, Mullapudi2016, test-corrupt
  std::string knobs;                      // "a:1,b:2" when scheduler == knobs
  bool is_default = false;                // the knobs are the C++ defaults
  std::string status;                     // ok, wrong (failed verification), failed (did not compile or run)
  std::string error;                      // why, when status != ok
  double max_error = 0;                   // worst |actual - expected| / allowed over the cases (<= 1 is ok)
  double time_ms = 0;                     // best time per run
  std::uint64_t samples = 0, iterations = 0;
  double compile_s = 0;
  std::string phase = "search";  // search, or confirm (winners re-measured at the end)
  std::string when;              // UTC, ISO 8601
  int line = 0;                  // where load_records() read it (from 1; 0: not read from a file), for messages

  bool verified() const { return status == "ok"; }
  // Identifies the variant and where it was measured (everything but the results).
  std::string key() const;
  bool same_context(const Record &other) const;
};

std::string to_json(const Record &r);
// Parses one line; false (and `error`, naming the field, what it takes and what it has) when it is
// not a record: not one flat JSON object, a field of the wrong type or out of range, a required
// field missing, or values no measurement has (an unknown status, a verified record slower than 0
// or outside the tolerance). Unknown fields are ignored. Knobs are checked against this build's
// knob spaces by the tuner (KnobSpace::problem), not here: the bundle's driver has no registry.
bool from_json(const std::string &line, Record &r, std::string &error);

// The records of a database, each with its line; a line that is not a record is skipped with a
// warning naming the file and line. A missing file has none.
std::vector<Record> load_records(const std::string &path);
// Appends one line; a last line cut short (a killed run) is ended first, so that the record
// starts on a line of its own.
void append_record(const std::string &path, const Record &r);

std::string utc_now();
using tools::json_quote;

}  // namespace hpipe::tune
