#include "latency_probe.hpp"

#include <chrono>
#include <stdexcept>

#include "stopwatch.hpp"

namespace bench {
namespace {

// SQLite's default: checkpoint once the WAL holds this many pages.
constexpr int kAutoCheckpointPages = 1000;

}  // namespace

void CommitProbe::watch(sqlite3* db) {
  if (watched_ == db) return;
  watched_ = db;
  sqlite3_wal_hook(db, &CommitProbe::on_commit, this);
}

void CommitProbe::mark() {
  std::lock_guard lock(mutex_);
  marked_ = true;
}

long long CommitProbe::last_commit_ns() {
  std::lock_guard lock(mutex_);
  return last_commit_ns_;
}

long long CommitProbe::wait_marked_commit(long long count) {
  std::unique_lock lock(mutex_);
  if (!committed_.wait_for(lock, std::chrono::seconds(30),
                           [&] { return marked_commits_ >= count; })) {
    throw std::runtime_error("bench: no handler commit within 30 s");
  }
  return marked_commit_ns_;
}

int CommitProbe::on_commit(void* self, sqlite3* db, const char* schema, int wal_pages) {
  long long now = monotonic_ns();
  auto* probe = static_cast<CommitProbe*>(self);
  {
    std::lock_guard lock(probe->mutex_);
    probe->last_commit_ns_ = now;
    if (probe->marked_) {
      probe->marked_ = false;
      ++probe->marked_commits_;
      probe->marked_commit_ns_ = now;
    }
  }
  probe->committed_.notify_all();
  if (wal_pages >= kAutoCheckpointPages) sqlite3_wal_checkpoint(db, schema);
  return SQLITE_OK;
}

}  // namespace bench
