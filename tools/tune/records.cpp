#include "tools/tune/records.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

#include "runtime/include/hpipe/device.h"  // kMostThreads: the most threads a record can have

namespace hpipe::tune {

namespace {

std::string number(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

// A value as the line has it: a string's text unescaped, any other value's token as written.
struct JsonValue {
  std::string text;
  bool quoted = false;
};

// Whether `t` is a JSON number (no NaN, Infinity, hex or leading '+').
bool is_json_number(const std::string &t) {
  std::size_t i = 0;
  const auto digits = [&] {
    const std::size_t from = i;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) i++;
    return i > from;
  };
  if (i < t.size() && t[i] == '-') i++;
  if (i < t.size() && t[i] == '0') {
    i++;
  } else if (!digits()) {
    return false;
  }
  if (i < t.size() && t[i] == '.' && (++i, !digits())) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    i++;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) i++;
    if (!digits()) return false;
  }
  return i == t.size();
}

std::string shown(const JsonValue &v) { return v.quoted ? json_quote(v.text) : "'" + v.text + "'"; }

// A finite JSON number from `least` to `most` (and an integer when `integer`), else an error that
// names the field, what it takes and what it has.
double read_number(const char *name, const JsonValue &v, double least, double most, bool integer) {
  const double value = !v.quoted && is_json_number(v.text) ? std::strtod(v.text.c_str(), nullptr) : NAN;
  if (!(value >= least && value <= most) || (integer && value != std::floor(value))) {
    std::ostringstream expected;
    expected.precision(17);
    if (most == std::numeric_limits<double>::max()) {
      expected << "a finite number >= " << least;
    } else {
      expected << (integer ? "an integer" : "a number") << " from " << least << " to " << most;
    }
    throw std::runtime_error(std::string("field \"") + name + "\": expected " + expected.str() + ", got " + shown(v));
  }
  return value;
}

// The fields of a record, in file order, as (name, writer, reader) over one Record.
struct Field {
  const char *name;
  std::function<std::string(const Record &)> write;
  std::function<void(Record &, const JsonValue &)> read;
};

Field text(const char *name, std::string Record::*member) {
  return {name, [member](const Record &r) { return json_quote(r.*member); },
          [member, name](Record &r, const JsonValue &v) {
            if (!v.quoted)
              throw std::runtime_error(std::string("field \"") + name + "\": expected a string, got " + shown(v));
            r.*member = v.text;
          }};
}
// An integer field, written exactly (a double's 6 digits would round sample counts).
template <class M>
Field integer(const char *name, M Record::*member, double most) {
  return {name, [member](const Record &r) { return std::to_string(r.*member); },
          [member, name, most](Record &r, const JsonValue &v) {
            r.*member = static_cast<M>(read_number(name, v, 0, most, true));
          }};
}
Field real(const char *name, double Record::*member) {
  return {name, [member](const Record &r) { return number(r.*member); },
          [member, name](Record &r, const JsonValue &v) {
            r.*member = read_number(name, v, 0, std::numeric_limits<double>::max(), false);
          }};
}
Field flag(const char *name, bool Record::*member) {
  return {name, [member](const Record &r) { return std::string(r.*member ? "true" : "false"); },
          [member, name](Record &r, const JsonValue &v) {
            if (v.quoted || (v.text != "true" && v.text != "false"))
              throw std::runtime_error(std::string("field \"") + name + "\": expected true or false, got " + shown(v));
            r.*member = v.text == "true";
          }};
}

// Counts up to 2^53 are exact in the doubles JSON readers use.
constexpr double kMostCount = 9007199254740992.0;

const std::vector<Field> &fields() {
  static const std::vector<Field> list = {
      text("op", &Record::op),
      text("type", &Record::type),
      text("backend", &Record::backend),
      text("shape", &Record::shape),
      text("target", &Record::target),
      text("machine", &Record::machine),
      integer("threads", &Record::threads, kMostThreads),
      text("scheduler", &Record::scheduler),
      text("knobs", &Record::knobs),
      flag("is_default", &Record::is_default),
      text("status", &Record::status),
      text("error", &Record::error),
      real("max_error", &Record::max_error),
      real("time_ms", &Record::time_ms),
      integer("samples", &Record::samples, kMostCount),
      integer("iterations", &Record::iterations, kMostCount),
      real("compile_s", &Record::compile_s),
      text("phase", &Record::phase),
      text("when", &Record::when),
  };
  return list;
}

// `value` of field `name` is one of `allowed`, else an error naming them.
void expect_one_of(const char *name, const std::string &value, std::initializer_list<const char *> allowed) {
  std::string list;
  for (const char *a : allowed) {
    if (value == a) return;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  throw std::runtime_error(std::string("field \"") + name + "\": expected one of " + list + ", got " +
                           json_quote(value));
}

// A minimal reader for one flat JSON object of strings, numbers and booleans, and nothing after it.
class FlatJson {
 public:
  explicit FlatJson(const std::string &s) : s_(s) {}
  std::vector<std::pair<std::string, JsonValue>> parse() {
    std::vector<std::pair<std::string, JsonValue>> out;
    expect('{');
    if (peek() != '}') {
      while (true) {
        const std::string key = string();
        expect(':');
        if (peek() == '"') {
          out.push_back({key, {string(), true}});
        } else {
          // The token up to the next separator, checked by the field that reads it (which names it).
          const std::size_t start = i_;
          while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}' && !std::isspace(static_cast<unsigned char>(s_[i_])))
            i_++;
          if (start == i_ || s_[start] == '{' || s_[start] == '[')
            throw std::runtime_error("field \"" + key + "\": expected a string, number or boolean at column " +
                                     std::to_string(start + 1));
          out.push_back({key, {s_.substr(start, i_ - start), false}});
        }
        if (peek() != ',') break;
        i_++;
      }
    }
    expect('}');
    if (peek() != '\0')
      throw std::runtime_error("unexpected text after the closing '}' at column " + column() + ": '" +
                               s_.substr(i_, 20) + "'");
    return out;
  }

 private:
  std::string column() const { return std::to_string(i_ + 1); }
  char peek() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) i_++;
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  void expect(char c) {
    if (peek() != c)
      throw std::runtime_error(std::string("'") + c + "' expected at column " + column() +
                               (i_ < s_.size() ? "" : ", got the end of the line (a line cut short?)"));
    i_++;
  }
  // The 4 hex digits of a \u escape at i_.
  unsigned hex4() {
    const std::string digits = s_.substr(i_, 4);
    if (digits.size() != 4 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
      throw std::runtime_error("a \\u escape at column " + column() + " needs 4 hex digits, got '" + digits + "'");
    i_ += 4;
    return static_cast<unsigned>(std::stoul(digits, nullptr, 16));
  }
  static void put_utf8(unsigned code, std::string &out) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xc0 | code >> 6), out += static_cast<char>(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xe0 | code >> 12), out += static_cast<char>(0x80 | (code >> 6 & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | code >> 18), out += static_cast<char>(0x80 | (code >> 12 & 0x3f));
      out += static_cast<char>(0x80 | (code >> 6 & 0x3f)), out += static_cast<char>(0x80 | (code & 0x3f));
    }
  }
  // A \u escape (after the u): a code point as UTF-8; \udc80 to \udcff, which json_quote writes for
  // a byte that is not UTF-8 (Python's surrogateescape), as that byte.
  void unicode_escape(std::string &out) {
    const unsigned code = hex4();
    if (code >= 0xdc80 && code <= 0xdcff) {
      out += static_cast<char>(code - 0xdc00);
    } else if (code >= 0xd800 && code <= 0xdbff && s_.compare(i_, 2, "\\u") == 0) {
      i_ += 2;
      const unsigned low = hex4();
      if (low < 0xdc00 || low > 0xdfff)
        throw std::runtime_error("a \\u escape at column " + column() + " is an unpaired surrogate");
      put_utf8(0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00), out);
    } else if (code >= 0xd800 && code <= 0xdfff) {
      throw std::runtime_error("a \\u escape at column " + column() + " is an unpaired surrogate");
    } else {
      put_utf8(code, out);
    }
  }
  std::string string() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      const char c = s_[i_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      const char e = i_ < s_.size() ? s_[i_++] : '\0';
      const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
      if (e == 'u') {
        unicode_escape(out);
      } else if (e && std::strchr(from, e)) {
        out += to[std::strchr(from, e) - from];
      } else {
        throw std::runtime_error("unknown escape '\\" + std::string(1, e) + "' at column " + column());
      }
    }
    expect('"');
    return out;
  }
  const std::string &s_;
  std::size_t i_ = 0;
};

}  // namespace

std::string Record::key() const {
  std::ostringstream k;
  k << op << '|' << type << '|' << backend << '|' << shape << '|' << target << '|' << machine << '|' << threads << '|'
    << scheduler << '|' << knobs;
  return k.str();
}

bool Record::same_context(const Record &o) const {
  return backend == o.backend && target == o.target && machine == o.machine && threads == o.threads;
}

std::string to_json(const Record &r) {
  std::string out = "{";
  for (const Field &f : fields()) {
    if (out.size() > 1) out += ",";
    out += json_quote(f.name) + ":" + f.write(r);
  }
  return out + "}";
}

bool from_json(const std::string &line, Record &r, std::string &error) {
  try {
    r = Record{};
    std::set<std::string> given;
    for (const auto &[key, value] : FlatJson(line).parse()) {
      if (!given.insert(key).second) throw std::runtime_error("field \"" + key + "\" given twice");
      for (const Field &f : fields())
        if (key == f.name) f.read(r, value);
    }
    for (const char *required : {"op", "backend", "shape", "target", "machine", "scheduler", "status"})
      if (!given.count(required)) throw std::runtime_error(std::string("no field \"") + required + "\"");
    // What the tuner and the bundle write; anything else would be ranked as if it were measured.
    expect_one_of("type", r.type, {"f32"});
    expect_one_of("backend", r.backend, {"cpu", "cuda"});
    expect_one_of("scheduler", r.scheduler, {"knobs", "Adams2019", "Mullapudi2016", "test-corrupt"});
    expect_one_of("status", r.status, {"ok", "wrong", "failed"});
    expect_one_of("phase", r.phase, {"search", "confirm"});
    if (r.verified() && !(r.time_ms > 0))
      throw std::runtime_error("field \"time_ms\": a verified record (status ok) needs a time > 0, got " +
                               number(r.time_ms));
    if (r.verified() && r.max_error > 1)
      throw std::runtime_error(
          "field \"max_error\": a verified record (status ok) is within the tolerance (at most 1), got " +
          number(r.max_error));
    return true;
  } catch (const std::exception &e) {
    error = e.what();
    return false;
  }
}

std::vector<Record> load_records(const std::string &path) {
  std::vector<Record> out;
  std::ifstream in(path);
  std::string line, error;
  for (int n = 1; std::getline(in, line); n++) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Record r;
    if (from_json(line, r, error)) {
      r.line = n;
      out.push_back(r);
    } else {
      std::cerr << "hpipe-tune: " << path << ":" << n << ": skipped, not a record (" << error << ")\n";
    }
  }
  return out;
}

void append_record(const std::string &path, const Record &r) {
  // A run killed while it wrote leaves a line without its newline: end it, or the record would be
  // glued to it and lost with it.
  bool end_last_line = false;
  {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    char last = '\n';
    if (in && in.tellg() > 0 && in.seekg(-1, std::ios::end) && in.get(last)) end_last_line = last != '\n';
  }
  errno = 0;
  std::ofstream out(path, std::ios::app | std::ios::binary);
  out << (end_last_line ? "\n" : "") << to_json(r) << "\n";
  out.flush();
  if (!out)
    throw std::runtime_error(path + ": cannot append a record" +
                             (errno ? std::string(": ") + std::strerror(errno) : ""));
}

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace hpipe::tune
