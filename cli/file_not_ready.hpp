// A file sluice cannot use as it is: no sluice tables (run `sluice init`), or an older schema
// that only `sluice migrate` upgrades. The CLI never changes a file to get past this: exit 5.
#pragma once

#include <stdexcept>

namespace sluice::cli {

class FileNotReady : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace sluice::cli
