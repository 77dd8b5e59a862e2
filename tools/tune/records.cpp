#include "tools/tune/records.h"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace hpipe::tune {

namespace {

std::string number(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

// The fields of a record, in file order, as (name, reader, writer) over one Record.
struct Field {
  const char *name;
  std::function<std::string(const Record &)> write;
  std::function<void(Record &, const std::string &value, bool quoted)> read;
};

template <class M>
Field text(const char *name, M Record::*member) {
  return {name, [member](const Record &r) { return json_quote(r.*member); },
          [member](Record &r, const std::string &v, bool) { r.*member = v; }};
}
template <class M>
Field num(const char *name, M Record::*member) {
  return {name, [member](const Record &r) { return number(static_cast<double>(r.*member)); },
          [member](Record &r, const std::string &v, bool) { r.*member = static_cast<M>(std::stod(v)); }};
}
Field flag(const char *name, bool Record::*member) {
  return {name, [member](const Record &r) { return std::string(r.*member ? "true" : "false"); },
          [member](Record &r, const std::string &v, bool) { r.*member = v == "true"; }};
}

const std::vector<Field> &fields() {
  static const std::vector<Field> list = {
      text("op", &Record::op),
      text("type", &Record::type),
      text("backend", &Record::backend),
      text("shape", &Record::shape),
      text("target", &Record::target),
      text("machine", &Record::machine),
      num("threads", &Record::threads),
      text("scheduler", &Record::scheduler),
      text("knobs", &Record::knobs),
      flag("is_default", &Record::is_default),
      text("status", &Record::status),
      text("error", &Record::error),
      num("max_error", &Record::max_error),
      num("time_ms", &Record::time_ms),
      num("samples", &Record::samples),
      num("iterations", &Record::iterations),
      num("compile_s", &Record::compile_s),
      text("phase", &Record::phase),
      text("when", &Record::when),
  };
  return list;
}

// A minimal reader for one flat JSON object of strings, numbers and booleans.
class FlatJson {
 public:
  explicit FlatJson(const std::string &s) : s_(s) {}
  std::vector<std::pair<std::string, std::pair<std::string, bool>>> parse() {
    std::vector<std::pair<std::string, std::pair<std::string, bool>>> out;
    expect('{');
    if (peek() == '}') return ++i_, out;
    while (true) {
      std::string key = string();
      expect(':');
      if (peek() == '"') {
        out.push_back({key, {string(), true}});
      } else {
        const std::size_t start = i_;
        while (i_ < s_.size() &&
               (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' || s_[i_] == '-' || s_[i_] == '+'))
          i_++;
        if (start == i_) throw std::runtime_error("value expected at column " + std::to_string(i_));
        out.push_back({key, {s_.substr(start, i_ - start), false}});
      }
      if (peek() == ',') {
        i_++;
        continue;
      }
      expect('}');
      return out;
    }
  }

 private:
  char peek() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) i_++;
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  void expect(char c) {
    if (peek() != c) throw std::runtime_error(std::string("'") + c + "' expected at column " + std::to_string(i_));
    i_++;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c == '\\' && i_ < s_.size()) {
        c = s_[i_++];
        if (c == 'n') c = '\n';
        if (c == 'u' && i_ + 4 <= s_.size()) c = static_cast<char>(std::stoi(s_.substr(i_, 4), nullptr, 16)), i_ += 4;
      }
      out += c;
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
    bool has_op = false;
    for (const auto &[key, value] : FlatJson(line).parse()) {
      for (const Field &f : fields())
        if (key == f.name) f.read(r, value.first, value.second), has_op |= key == std::string("op");
    }
    if (!has_op) throw std::runtime_error("no \"op\"");
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
      out.push_back(r);
    } else {
      std::cerr << "hpipe-tune: " << path << ":" << n << ": skipped, not a record (" << error << ")\n";
    }
  }
  return out;
}

void append_record(const std::string &path, const Record &r) {
  std::ofstream out(path, std::ios::app);
  out << to_json(r) << "\n";
  if (!out) throw std::runtime_error("cannot append to " + path);
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
