// A broken promise found by the model test: which invariant, and the facts that show it.
#pragma once

#include <string>

namespace sluice::model {

struct Violation {
  // A stable name of the invariant, e.g. "per-key order"; failures are grouped by it.
  std::string invariant;
  std::string detail;
};

}  // namespace sluice::model
