// A JSON string literal for any text: quotes, backslashes and control characters escaped, and
// bytes that are not UTF-8 escaped as Python's surrogateescape reads them.
// Shared by the hpipe tool (--json) and hpipe-tune (its records).
#pragma once

#include <cstdio>
#include <string>

namespace hpipe::tools {

// The length of the valid UTF-8 sequence at s[i] (overlong forms, surrogates and code points past
// U+10FFFF are not valid), or 0.
inline std::size_t utf8_length(const std::string &s, std::size_t i) {
  const auto at = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  const unsigned c = at(0);
  const auto follows = [&](std::size_t k) { return (at(k) & 0xc0) == 0x80; };
  if (c >= 0xc2 && c <= 0xdf) return follows(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    const unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    return at(1) >= lo && at(1) <= hi && follows(2) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    return at(1) >= lo && at(1) <= hi && follows(2) && follows(3) ? 4 : 0;
  }
  return 0;
}

// Text that is not UTF-8 (a file name is any bytes) stays valid JSON: each byte outside a valid
// sequence is written as \udcXX, as Python's surrogateescape decodes it, so json.loads and
// os.fsencode give the original bytes back.
inline std::string json_quote(const std::string &s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size(); i++) {
    const auto c = static_cast<unsigned char>(s[i]);
    char buf[8];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += s[i];
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else if (c < 0x80) {
      out += s[i];
    } else if (const std::size_t n = utf8_length(s, i)) {
      out.append(s, i, n);
      i += n - 1;
    } else {
      std::snprintf(buf, sizeof buf, "\\udc%02x", c);
      out += buf;
    }
  }
  return out + "\"";
}

}  // namespace hpipe::tools
