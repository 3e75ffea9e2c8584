#include "latency_probe.hpp"

#include <chrono>
#include <stdexcept>

#include "stopwatch.hpp"

namespace bench {

void CommitProbe::watch(sqlite3* db) {
  if (watched_ == db) return;
  watched_ = db;
  sqlite3_commit_hook(db, &CommitProbe::on_commit, this);
}

void CommitProbe::mark() {
  std::lock_guard lock(mutex_);
  marked_ = true;
}

long long CommitProbe::wait_marked_commit(long long count) {
  std::unique_lock lock(mutex_);
  if (!committed_.wait_for(lock, std::chrono::seconds(30),
                           [&] { return marked_commits_ >= count; })) {
    throw std::runtime_error("bench: no handler commit within 30 s");
  }
  return marked_commit_ns_;
}

int CommitProbe::on_commit(void* self) {
  long long now = monotonic_ns();
  auto* probe = static_cast<CommitProbe*>(self);
  {
    std::lock_guard lock(probe->mutex_);
    if (probe->marked_) {
      probe->marked_ = false;
      ++probe->marked_commits_;
      probe->marked_commit_ns_ = now;
    }
  }
  probe->committed_.notify_all();
  return 0;
}

}  // namespace bench
