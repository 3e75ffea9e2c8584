// How `sluice tail` learns that another connection committed: the same wake-up as a started
// worker's (lib/src/file_watch.hpp), with PRAGMA data_version polled as the fallback.
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <chrono>

#include "file_watch.hpp"
#include "interrupt.hpp"

namespace sluice::cli {

// Not thread-safe: used by the thread that uses `db`, which must outlive it.
class CommitWait {
 public:
  // Watches the file `db` is connected to, reading data_version at least every
  // FileWatch::kSafetyNetPolls poll intervals; without a file watch, polls every `poll_interval`.
  CommitWait(SQLite::Database& db, std::chrono::milliseconds poll_interval);

  // Waits until a commit by another connection since the last call (or construction) is
  // visible (true), or `timeout` passes or `interrupt` fires (false).
  bool wait_for(InterruptWatch& interrupt, std::chrono::milliseconds timeout);

 private:
  long long read_version();

  SQLite::Statement query_;
  std::chrono::milliseconds poll_interval_;
  FileWatch watch_;
  long long version_;
};

}  // namespace sluice::cli
