// A SQLite VFS that models a power cut of a whole box: several processes sharing one database
// file. Unlike PowerLossVfs (one process, writes held in its memory), every write reaches the real
// file at once, so the processes see each other's writes as they do through the OS page cache;
// what a sync has not yet covered is remembered as an undo log of pre-images, shared by the
// processes in a box directory. A sync by any process makes the whole file durable (fsync flushes
// every dirty page of the file, whoever wrote it). At the cut the process that reaches it freezes
// every other writer of the box, puts each file back to its last-synced content (or, reordered,
// keeps a random mix of synced and unsynced 4 KiB blocks and either size) and kills the box's
// process group, itself included.
//
// The pre-images are read through SQLite's own file handle: a descriptor of our own on the
// database file, once closed, would drop every POSIX lock the process holds on it, and another
// process would then think itself alone (checkpoint and delete the WAL under live connections).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>

namespace sluice::torture {

// What a power cut keeps of the writes made since a file's last sync.
enum class BoxTear {
  // None of them.
  kClean,
  // Each 4 KiB block touched since the sync is either synced or current, at random, and the file
  // has either its synced or its current size.
  kReordered,
};

// Registers, for its lifetime, a VFS named "power-box" over the default VFS, made the default.
// Thread-safe. Every process of a box must be in one process group of its own (the cut kills the
// group) and run with the same box directory.
class PowerBoxVfs {
 public:
  // `box_dir` must exist. `seed` drives the reordered tear.
  PowerBoxVfs(const std::string& box_dir, std::uint64_t seed);
  ~PowerBoxVfs();
  PowerBoxVfs(const PowerBoxVfs&) = delete;
  PowerBoxVfs& operator=(const PowerBoxVfs&) = delete;

  // Cuts the power at this process's `n`-th write, truncate or sync from now (1 = the next one).
  void cut_at_io(long long n, BoxTear tear);

  // Cuts the power now from the calling thread.
  [[noreturn]] void cut_now(BoxTear tear);

  // Writes, truncates and syncs this process made since it was constructed.
  long long io_calls() const;

  // The file a cut leaves in the box directory: "pid io-calls clean|reordered armed|now".
  static std::string cut_marker(const std::string& box_dir);

  // Forgets the box's undo logs and cut marker: the files on disk are what survived and are now
  // all synced. For the parent, with no process of the box left.
  static void reset(const std::string& box_dir);

  // Reads "N:clean" or "N:reordered" ("N" alone: clean) into `n` and `tear`. Throws
  // std::invalid_argument naming the spec otherwise.
  static void parse_cut(const std::string& spec, long long& n, BoxTear& tear);

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace sluice::torture
