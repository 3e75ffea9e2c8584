// Learns from the kernel that a database file may have changed, so that an idle reader can sleep
// until then instead of polling.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace sluice {

// On Linux, an inotify watch on the database's directory: it sees the `-wal` file written,
// truncated (a checkpoint), created, deleted or replaced, and the database file itself written or
// replaced. Watching the directory rather than the files keeps the watch valid when a file is
// replaced or the WAL is deleted and re-created.
//
// Not available (available() is false) on another OS, on a network filesystem (where another
// machine's writes raise no event), when the inotify instance or watch limit is reached or the
// directory cannot be watched: the caller must then poll. An event is a hint, never a promise
// that a commit is visible yet (the WAL is written before the commit is published in the shared
// memory index), and an overflowed event queue counts as a change: callers check and keep a slow
// poll as a safety net.
//
// Thread-safe only for interrupt(); everything else is used by one thread.
class FileWatch {
 public:
  explicit FileWatch(const std::string& database_path);
  ~FileWatch();
  // While a watch is available, a reader it wakes still reads PRAGMA data_version (and a worker
  // its clock) at least every this many poll intervals (5 s by default): the slow safety net for
  // a change the kernel did not report, e.g. one written through a hard link in another
  // directory or published after the reader stopped looking. Without a watch the reader polls
  // every poll interval. Each check is a wake: the fewer, the less an idle reader costs.
  static constexpr int kSafetyNetPolls = 50;

  FileWatch(const FileWatch&) = delete;
  FileWatch& operator=(const FileWatch&) = delete;

  // Whether changes are reported. Becomes false if the directory itself goes away or is moved.
  bool available() const { return watch_ >= 0; }

  // Waits until the file may have changed (true), or `timeout` passes, interrupt() is called, a
  // signal arrives or `also_readable` (a descriptor, if not -1, e.g. a signal handler's
  // self-pipe, left unread) is readable (false). Consumes every event queued so far. Returns
  // false at once if not available().
  bool wait(std::chrono::steady_clock::duration timeout, int also_readable = -1);

  // Ends the current or next wait() early. Thread-safe.
  void interrupt();

  // Stops the kernel reporting writes until listen(): a reader busy with the file needs no wake,
  // and a write under a watch that reports it costs the writer (this process or another) as much
  // again in the kernel here (about 0.7 µs on top of a 4 KiB pwrite's 0.75 µs), 10-15% of a
  // worker draining a backlog. The directory's own removal or move still ends the watch.
  void mute();

  // Reports writes again. Returns true if the watch was muted: a write made
  // meanwhile raised no event, so the caller must look for itself, allowing, as after an event,
  // for a commit written before and published after it looks.
  bool listen();

 private:
  // Reads every queued event; true if one concerns the database or its WAL (or the queue
  // overflowed).
  bool read_events();

  // Sets what the watch reports; stops watching if the directory is no longer the one watched.
  void watch_for(std::uint32_t events);

  std::string directory_;
  std::string file_name_;  // the database's name within its directory
  std::string wal_name_;
  int inotify_ = -1;
  int watch_ = -1;
  int interrupt_ = -1;  // an eventfd
  bool muted_ = false;
};

}  // namespace sluice
