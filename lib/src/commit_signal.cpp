#include "commit_signal.hpp"

#include <sqlite3.h>

#include <map>
#include <string>

namespace sluice {
namespace {

// Called by SQLite while the commit is finishing; the worker's BEGIN IMMEDIATE then waits on the
// busy handler for the write lock, so it sees the commit.
int on_commit(void* signal) {
  static_cast<CommitSignal*>(signal)->raise();
  return 0;
}

}  // namespace

CommitSignal* CommitSignal::of(SQLite::Database& db) {
  const char* file = sqlite3_db_filename(db.getHandle(), "main");
  if (file == nullptr || *file == '\0') return nullptr;
  static std::mutex registry_mutex;
  static auto* registry = new std::map<std::string, std::unique_ptr<CommitSignal>>;
  std::lock_guard lock(registry_mutex);
  auto& slot = (*registry)[file];
  if (!slot) slot = std::make_unique<CommitSignal>();
  return slot.get();
}

void CommitSignal::watch(SQLite::Database& db) {
  if (CommitSignal* signal = of(db)) sqlite3_commit_hook(db.getHandle(), on_commit, signal);
}

std::uint64_t CommitSignal::generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

void CommitSignal::raise() {
  {
    std::lock_guard lock(mutex_);
    ++generation_;
  }
  changed_.notify_all();
}

void CommitSignal::wait(std::uint64_t seen, std::chrono::steady_clock::duration timeout) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return generation_ != seen; });
}

}  // namespace sluice
