// Commit times on one connection, taken by SQLite's WAL hook right after each commit, so a
// latency runs from one commit to another and not from when a call happened to return.
#pragma once

#include <sqlite3.h>

#include <condition_variable>
#include <mutex>

namespace bench {

// The hook runs on the watched connection's thread; last_commit_ns() and wait_marked_commit()
// are thread-safe. Must
// outlive the watched connection.
class CommitProbe {
 public:
  // Installs the WAL hook on `db` unless already watching it; call from the connection's thread.
  // The hook also checkpoints as SQLite's default one would, which it replaces.
  void watch(sqlite3* db);
  // The next commit on the watched connection is the one to report (e.g. a handler's).
  void mark();
  // CLOCK_MONOTONIC ns of the latest commit on the watched connection; 0 before the first.
  long long last_commit_ns();
  // Waits until `count` marked commits have happened; returns the CLOCK_MONOTONIC ns of the
  // latest. Throws
  // after 30 s without one.
  long long wait_marked_commit(long long count);

 private:
  static int on_commit(void* self, sqlite3* db, const char* schema, int wal_pages);

  sqlite3* watched_ = nullptr;
  std::mutex mutex_;
  std::condition_variable committed_;
  bool marked_ = false;
  long long marked_commits_ = 0;
  long long marked_commit_ns_ = 0;
  long long last_commit_ns_ = 0;
};

}  // namespace bench
