// The one exception type hpipe throws: bad arguments and kernel failures alike. The message names
// the operation and the argument, and says what was expected and what was given.
#pragma once

#include <stdexcept>
#include <string>

namespace hpipe {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace hpipe
