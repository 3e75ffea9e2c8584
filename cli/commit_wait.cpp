#include "commit_wait.hpp"

#include <sqlite3.h>

#include <algorithm>

namespace sluice::cli {
namespace {

std::string file_of(SQLite::Database& db) {
  const char* file = sqlite3_db_filename(db.getHandle(), "main");
  return file == nullptr ? std::string() : file;
}

}  // namespace

CommitWait::CommitWait(SQLite::Database& db, std::chrono::milliseconds poll_interval)
    : query_(db, "PRAGMA data_version"),
      poll_interval_(poll_interval),
      watch_(file_of(db)),
      version_(read_version()) {}

long long CommitWait::read_version() {
  query_.reset();
  query_.executeStep();
  const long long version = query_.getColumn(0).getInt64();
  query_.reset();
  return version;
}

bool CommitWait::wait_for(InterruptWatch& interrupt, std::chrono::milliseconds timeout) {
  using std::chrono::milliseconds;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // As a started worker: while the kernel watches the file, data_version is only the safety net.
  auto longest = [&] {
    return watch_.available() ? poll_interval_ * FileWatch::kSafetyNetPolls : poll_interval_;
  };
  milliseconds slice = longest();
  while (!interrupt.interrupted()) {
    const auto left = std::chrono::ceil<milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    bool woken = false;
    if (watch_.available()) {
      woken = watch_.wait(std::min(left, slice), interrupt.readable_when_interrupted());
    } else if (interrupt.wait_for(std::min(left, slice))) {
      return false;
    }
    const long long version = read_version();
    if (version != version_) {
      version_ = version;
      return true;
    }
    // An event can come before its commit is visible: look again after 1, 2, 4 ... ms.
    slice = woken ? milliseconds(1) : std::min(slice * 2, longest());
  }
  return false;
}

}  // namespace sluice::cli
