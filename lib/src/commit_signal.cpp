#include "commit_signal.hpp"

#include <SQLiteCpp/Column.h>
#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace sluice {
namespace {

// What a connection's WAL hook needs: the signal to raise and the connection's own
// auto-checkpoint threshold, which installing a WAL hook would otherwise switch off.
struct HookTarget {
  CommitSignal* signal;
  int checkpoint_pages;  // 0: the app checkpoints itself
};

// Called after a commit has reached the WAL, so the woken worker's next read sees it. (A commit
// hook runs before the commit is visible: the worker would find nothing and sleep a poll.)
int on_wal_commit(void* target, sqlite3* db, const char* schema, int pages) {
  const auto* hook = static_cast<const HookTarget*>(target);
  hook->signal->raise();
  if (hook->checkpoint_pages > 0 && pages >= hook->checkpoint_pages) {
    sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  }
  return SQLITE_OK;
}

// One target per (signal, threshold), alive for the process: few distinct values exist.
const HookTarget* hook_target(CommitSignal* signal, int checkpoint_pages) {
  static std::mutex mutex;
  static auto* targets = new std::map<std::pair<CommitSignal*, int>, std::unique_ptr<HookTarget>>;
  std::lock_guard lock(mutex);
  auto& slot = (*targets)[{signal, checkpoint_pages}];
  if (!slot) slot = std::make_unique<HookTarget>(HookTarget{signal, checkpoint_pages});
  return slot.get();
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
  CommitSignal* signal = of(db);
  if (signal == nullptr) return;
  // Keep the app's PRAGMA wal_autocheckpoint (1000 unless changed; 0 means never).
  const int pages = db.execAndGet("PRAGMA wal_autocheckpoint").getInt();
  sqlite3_wal_hook(db.getHandle(), on_wal_commit,
                   const_cast<HookTarget*>(hook_target(signal, pages)));
}

std::uint64_t CommitSignal::generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

void CommitSignal::add_watch(FileWatch* watch) {
  std::lock_guard lock(mutex_);
  watches_.push_back(watch);
}

void CommitSignal::remove_watch(FileWatch* watch) {
  std::lock_guard lock(mutex_);
  watches_.erase(std::remove(watches_.begin(), watches_.end(), watch), watches_.end());
}

void CommitSignal::raise() {
  {
    std::lock_guard lock(mutex_);
    ++generation_;
    for (FileWatch* watch : watches_) watch->interrupt();
  }
  changed_.notify_all();
}

void CommitSignal::wait(std::uint64_t seen, std::chrono::steady_clock::duration timeout) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return generation_ != seen; });
}

void CommitSignal::note_writer_waiting() {
  writer_waited_at_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                          std::memory_order_relaxed);
}

bool CommitSignal::writer_waited_since(std::chrono::steady_clock::time_point since) const {
  return writer_waited_at_.load(std::memory_order_relaxed) >= since.time_since_epoch().count();
}

}  // namespace sluice
