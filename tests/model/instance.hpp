// One worker instance of a model sequence, whatever drives it: a C++ Worker (worker_instance),
// a C API sluice_worker (c_worker_instance) or SQL consumers on a sqlite3 connection
// (sql_instance), as its InstanceConfig's kind says.
#pragma once

#include <optional>

#include "sluice/worker.hpp"

namespace sluice::model {

// Not thread-safe: driven by the sequence's thread.
class Instance {
 public:
  virtual ~Instance() = default;
  // Delivers until nothing is due.
  virtual DrainResult drain() = 0;
  // Write transactions begun on its connection so far; none where the library keeps the
  // connection to itself (the C API's worker).
  virtual std::optional<long long> write_transactions() const = 0;
};

}  // namespace sluice::model
