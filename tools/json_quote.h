// A JSON string literal for any text: quotes, backslashes and control characters escaped.
// Shared by the hpipe tool (--json) and hpipe-tune (its records).
#pragma once

#include <cstdio>
#include <string>

namespace hpipe::tools {

inline std::string json_quote(const std::string &s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace hpipe::tools
