// Whether a worker lives, told by the kernel. Every process sharing a file in WAL mode runs on one
// host (SQLite's shared memory requires it), so an advisory lock answers "is the owner alive?"
// for all of them: a registered worker holds an open-file-description (OFD) write lock on one
// byte of the sidecar file "<database>-sluice-lock", the byte at the offset of its worker id
// (ids are never reused). The kernel drops the lock when the process dies, however it dies, and
// when the worker closes it; a stopped process (SIGSTOP, a suspended laptop) keeps it. No
// renewal, no write to the database, no /proc, and it works across PID namespaces.
//
// The sidecar holds no data: it is created empty, and a lock beyond its end is still a lock.
// Deleting it while workers run makes them look dead to processes that open it afterwards: their
// claims are then taken over, and the fencing of claim_book.hpp keeps the stale owners from
// writing. A process forked from a worker without exec shares the worker's open file
// description and keeps the lock alive as long as it runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sluice {

// The lock file beside the database at `database_path`.
std::string liveness_lock_path(const std::string& database_path);

// One worker's lock. Not thread-safe; movable, not copyable. Releases the lock when destroyed.
class LivenessLock {
 public:
  // Locks byte `worker_id` of the lock file beside `database_path`, creating the file if
  // needed. Empty when it cannot (a read-only directory, a file system without OFD locks, or the
  // byte already locked): the worker then falls back to leases (process_identity.hpp).
  static std::optional<LivenessLock> take(const std::string& database_path, std::int64_t worker_id);
  ~LivenessLock();
  LivenessLock(LivenessLock&& other) noexcept;
  LivenessLock& operator=(LivenessLock&& other) noexcept;
  LivenessLock(const LivenessLock&) = delete;
  LivenessLock& operator=(const LivenessLock&) = delete;

 private:
  explicit LivenessLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Asks whether workers hold their locks. Not thread-safe. Opens the lock file read-only, only
// once asked, and never creates it: a reader never writes.
class LivenessProbe {
 public:
  explicit LivenessProbe(std::string database_path);
  ~LivenessProbe();
  LivenessProbe(const LivenessProbe&) = delete;
  LivenessProbe& operator=(const LivenessProbe&) = delete;

  // Whether byte `worker_id` of the lock file is locked by anyone (this process included). False
  // when the file does not exist: no worker holds a lock in it. Empty when the kernel cannot
  // tell (a file system without OFD locks).
  std::optional<bool> held(std::int64_t worker_id);

 private:
  const std::string lock_path_;
  int fd_ = -1;
};

}  // namespace sluice
