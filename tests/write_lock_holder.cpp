#include "write_lock_holder.hpp"

#include <SQLiteCpp/Database.h>
#include <signal.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace sluice::testing {
namespace {

// Holds the lock until killed: the transaction is never committed.
constexpr const char* kHoldLock =
    "import sqlite3, sys, time\n"
    "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "db.execute('BEGIN IMMEDIATE')\n"
    "print('holding the write lock', flush=True)\n"
    "time.sleep(3600)\n";

}  // namespace

bool write_locked(const std::string& path) {
  SQLite::Database db(path, SQLite::OPEN_READWRITE);
  try {
    db.exec("BEGIN IMMEDIATE");
  } catch (const SQLite::Exception&) {
    return true;
  }
  db.exec("ROLLBACK");
  return false;
}

WriteLockHolder::WriteLockHolder(const std::string& path, const std::string& log_path)
    : child_(std::make_unique<ChildProcess>(
          std::vector<std::string>{"python3", "-c", kHoldLock, path}, log_path)) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!write_locked(path)) {
    if (!child_->running() || std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("WriteLockHolder: python3 did not take the lock (see " + log_path +
                               ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

WriteLockHolder::~WriteLockHolder() { release(); }

void WriteLockHolder::release() {
  if (child_->running()) child_->end(SIGTERM);
}

}  // namespace sluice::testing
