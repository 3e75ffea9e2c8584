#include "commit_signal.hpp"

#include <sqlite3.h>

#include <map>
#include <string>

namespace sluice {
namespace {

// SQLite's checkpoint threshold, which installing a WAL hook would otherwise switch off.
constexpr int kAutoCheckpointPages = 1000;

// Called after a commit has reached the WAL, so the woken worker's next read sees it. (A commit
// hook runs before the commit is visible: the worker would find nothing and sleep a poll.)
int on_wal_commit(void* signal, sqlite3* db, const char* schema, int pages) {
  static_cast<CommitSignal*>(signal)->raise();
  if (pages >= kAutoCheckpointPages)
    sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  return SQLITE_OK;
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
  if (CommitSignal* signal = of(db)) sqlite3_wal_hook(db.getHandle(), on_wal_commit, signal);
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
