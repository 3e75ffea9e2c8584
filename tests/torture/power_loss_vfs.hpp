// A SQLite VFS that models a disk cache: writes reach the disk only at xSync, and a simulated
// power cut lands none, some, or torn parts of the writes still in the cache, as SQLite's own
// crash tests do.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>

namespace sluice::torture {

// What a power cut does with the writes made since a file's last xSync.
enum class Tear {
  // None of them reach the disk.
  kDropAll,
  // Each reaches the disk or not, at random and in any order.
  kRandomSubset,
  // As kRandomSubset, and a write that lands may land only a prefix of its 512-byte sectors.
  kTornSectors,
};

// Registers, for its lifetime, a VFS named `name` over the default VFS. Files are shared by path
// across connections, as the OS page cache is. Thread-safe. The process cut happens inside an
// I/O call of whichever thread reaches it; it ends the process with _exit(kPowerCutExitCode)
// after writing the surviving state to the real files, so the files a parent process finds are
// what a disk would hold after the power came back.
class PowerLossVfs {
 public:
  static constexpr int kPowerCutExitCode = 86;

  // With `make_default`, also the VFS of every connection opened without a VFS name, such as
  // those the library opens itself.
  PowerLossVfs(std::string name, std::uint64_t seed, bool make_default = false);
  ~PowerLossVfs();
  PowerLossVfs(const PowerLossVfs&) = delete;
  PowerLossVfs& operator=(const PowerLossVfs&) = delete;

  const std::string& name() const;

  // Cuts the power at the `n`-th write or sync call from now (1 = the very next one).
  void cut_at_io(long long n, Tear tear);

  // Cuts the power now from the calling thread.
  [[noreturn]] void cut_now(Tear tear);

  // Writes every cached write to disk, as a clean shutdown would. Call with no connection open.
  void flush_all();

  // Bytes written but not yet synced, over all files.
  long long unsynced_bytes() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace sluice::torture
