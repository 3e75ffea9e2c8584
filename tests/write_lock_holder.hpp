// Test support: another process (Python's sqlite3 module, a real outside client) holding a
// file's write lock until the test ends it by PID.
#pragma once

#include <memory>
#include <string>

#include "child_process.hpp"

namespace sluice::testing {

// Not thread-safe. The lock is held from construction until release() or destruction.
class WriteLockHolder {
 public:
  // Starts `python3` holding `BEGIN IMMEDIATE` on `path` and returns once the lock is taken, so
  // that every writer of the file waits from then on. Its output goes to `log_path`.
  WriteLockHolder(const std::string& path, const std::string& log_path);
  ~WriteLockHolder();
  WriteLockHolder(const WriteLockHolder&) = delete;
  WriteLockHolder& operator=(const WriteLockHolder&) = delete;

  // Ends the holder (SIGTERM, by PID); its transaction is rolled back and the lock freed.
  void release();

 private:
  std::unique_ptr<ChildProcess> child_;
};

// Whether another connection holds `path`'s write lock right now.
bool write_locked(const std::string& path);

}  // namespace sluice::testing
