// Wakes a worker at once when a connection in the same process commits to its file.
#pragma once

#include <SQLiteCpp/Database.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "file_watch.hpp"

namespace sluice {

// Thread-safe. One per database file in the process, alive for the whole process.
class CommitSignal {
 public:
  // The signal of the file `db` is connected to; nullptr for an in-memory database.
  static CommitSignal* of(SQLite::Database& db);

  // Makes every commit on `db` raise the signal of its file. Uses the connection's WAL hook,
  // keeping the connection's PRAGMA wal_autocheckpoint threshold as it is now; replaces any WAL
  // hook the app had set. Setting wal_autocheckpoint afterwards removes the hook: set it first.
  static void watch(SQLite::Database& db);

  // Makes every raise() also interrupt `watch` (so that a worker asleep on its file watch wakes
  // at once for a commit in this process), until remove_watch(watch).
  void add_watch(FileWatch* watch);
  void remove_watch(FileWatch* watch);

  std::uint64_t generation() const;
  void raise();

  // A connection opened by sluice calls this on every try it makes for the write lock while
  // another connection of the file holds it (database.cpp's busy handler): a worker of this
  // process at full drain then leaves the lock free right after its step (LockSharing).
  void note_writer_waiting();
  // Whether such a try was made at or after `since`.
  bool writer_waited_since(std::chrono::steady_clock::time_point since) const;
  // Waits until the generation differs from `seen` or `timeout` passes.
  void wait(std::uint64_t seen, std::chrono::steady_clock::duration timeout);

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t generation_ = 0;
  std::vector<FileWatch*> watches_;
  // steady_clock ticks of the latest note_writer_waiting(); lock-free: a worker reads it after
  // every step.
  std::atomic<std::chrono::steady_clock::rep> writer_waited_at_{0};
};

}  // namespace sluice
