// Bad input caught by the CLI itself (a malformed duration, time or flag combination): exit 2.
#pragma once

#include <stdexcept>

namespace sluice::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace sluice::cli
