// Handler commit times on the worker's connection, taken by SQLite's commit hook, so a latency
// ends when the handler's transaction commits and not when some call happened to return.
//
// A commit hook, not a WAL hook: an Outbox wakes the worker from the WAL hook of its connection,
// and a connection has one WAL hook, so a probe there would replace sluice's wake-up. sluice
// uses no commit hooks. The hook runs just before the commit writes its WAL frames: under
// synchronous=NORMAL that remaining write() takes microseconds; under FULL the fsync after it is
// not counted.
#pragma once

#include <sqlite3.h>

#include <condition_variable>
#include <mutex>

namespace bench {

// The hook runs on the watched connection's thread; mark() and wait_marked_commit() are
// thread-safe. Must outlive the watched connection.
class CommitProbe {
 public:
  // Installs the commit hook on `db` unless already watching it; call from its thread.
  void watch(sqlite3* db);
  // The next commit on the watched connection is the one to report (e.g. a handler's).
  void mark();
  // Waits until `count` marked commits have happened; returns the CLOCK_MONOTONIC ns of the
  // latest. Throws after 30 s without one.
  long long wait_marked_commit(long long count);

 private:
  static int on_commit(void* self);

  sqlite3* watched_ = nullptr;
  std::mutex mutex_;
  std::condition_variable committed_;
  bool marked_ = false;
  long long marked_commits_ = 0;
  long long marked_commit_ns_ = 0;
};

}  // namespace bench
