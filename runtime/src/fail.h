// The one place that spells an argument error: "hpipe::<op>: <arg>: <message>".
#pragma once

#include <string>
#include <string_view>

namespace hpipe::detail {

// Throws hpipe::Error("hpipe::<op>: <arg>: <message>"). Call::fail is this for the Call's op; use this
// one for checks made before (or without) a Call.
[[noreturn]] void fail(std::string_view op, std::string_view arg, const std::string &message);

}  // namespace hpipe::detail
