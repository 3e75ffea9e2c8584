#include "change_wait.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

namespace sluice::sqlext {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Without a watch: how often data_version is read.
constexpr milliseconds kPollInterval{50};
// With one: the safety net for a write the kernel did not report (FileWatch::kSafetyNetPolls).
constexpr milliseconds kSafetyNet{5000};
// After a reported write that is not visible yet (the WAL is written before the commit is
// published in its index), how often to look again until it is, and for how long.
constexpr milliseconds kPublishPoll{1};
constexpr milliseconds kPublishWindow{50};

}  // namespace

ChangeWait::ChangeWait(SQLite::Database& db) : db_(db), version_(db) {}

const char* ChangeWait::path() const {
  const char* file = sqlite3_db_filename(db_.getHandle(), "main");
  return file != nullptr && *file != '\0' ? file : nullptr;
}

void ChangeWait::mark() { seen_ = version_.read(); }

bool ChangeWait::wait(Duration timeout) {
  if (!watch_ && path() != nullptr) watch_ = std::make_unique<FileWatch>(path());
  const auto deadline = steady_clock::now() + timeout;
  steady_clock::time_point publish_until = steady_clock::time_point::min();
  for (;;) {
    const long long now_seen = version_.read();
    if (seen_ && now_seen != *seen_) {
      seen_ = now_seen;
      return true;
    }
    seen_ = now_seen;
    const auto now = steady_clock::now();
    if (now >= deadline) return false;
    const auto left = deadline - now;
    if (now < publish_until) {
      std::this_thread::sleep_for(std::min<steady_clock::duration>(left, kPublishPoll));
    } else if (watch_ && watch_->available()) {
      if (watch_->wait(std::min<steady_clock::duration>(left, kSafetyNet))) {
        publish_until = steady_clock::now() + kPublishWindow;
      }
    } else {
      std::this_thread::sleep_for(std::min<steady_clock::duration>(left, kPollInterval));
    }
  }
}

}  // namespace sluice::sqlext
