// A SQLite VFS that wraps the default one and fails the Nth I/O call on purpose.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <memory>
#include <string>

namespace sluice::torture {

// Kinds of I/O call a fault plan counts; combine with |.
enum IoCall : unsigned {
  kOpen = 1u << 0,
  kRead = 1u << 1,
  kWrite = 1u << 2,
  kSync = 1u << 3,
  kTruncate = 1u << 4,
  kFileSize = 1u << 5,
  kLock = 1u << 6,
  kDelete = 1u << 7,
  kAccess = 1u << 8,
  kShm = 1u << 9,
  kAnyIo = (1u << 10) - 1,
};

struct FaultPlan {
  // The 1-based index, among calls of the kinds in `calls`, of the first call to fail.
  long long fail_at = 1;
  // Fail every counted call from fail_at on, not just that one.
  bool persistent = false;
  // SQLITE_IOERR (reported as the matching extended code, e.g. SQLITE_IOERR_WRITE) or SQLITE_FULL.
  int error = SQLITE_IOERR;
  unsigned calls = kAnyIo;
};

// Registers, for its lifetime, a VFS named `name` that forwards to the default VFS and injects
// the armed FaultPlan. Thread-safe: arm() and disarm() may race with I/O on other threads. At
// most one FaultVfs per name; every connection opened on it must be closed before destruction.
class FaultVfs {
 public:
  // With `make_default`, also the VFS of every connection opened without a VFS name.
  explicit FaultVfs(std::string name, bool make_default = false);
  ~FaultVfs();
  FaultVfs(const FaultVfs&) = delete;
  FaultVfs& operator=(const FaultVfs&) = delete;

  const std::string& name() const;

  // Starts counting calls from zero under `plan`.
  void arm(const FaultPlan& plan);
  // Stops injecting faults; calls pass through untouched.
  void disarm();
  // Counted calls since the last arm().
  long long calls() const;
  // Faults injected since the last arm().
  long long faults() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace sluice::torture
