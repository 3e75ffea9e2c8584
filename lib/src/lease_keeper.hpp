// Renews the leases of one worker's claims while it holds any. A process that cannot tell
// whether the worker lives (another PID namespace, no readable /proc: see process_identity.hpp)
// takes a claim over only once its lease has expired, so a live worker must keep it from
// expiring, also while a handler runs far longer than the lease on the worker's thread or on its
// helper thread. Hence a thread and a connection of its own.
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "sluice/options.hpp"

namespace sluice {

// Thread-safe.
class LeaseKeeper {
 public:
  // Keeps the claims of `owner` in the file at `path` leased until claim_lease past the clock's
  // time, renewing them every claim_lease / 3 while hold(true) is in effect. Starts its thread
  // and opens its connection only once its owner first holds claims.
  LeaseKeeper(std::string path, std::string owner, const Options& options);
  // Joins the thread.
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  // Whether the owner holds claims now. A keeper whose owner holds none writes nothing.
  void hold(bool holding);

 private:
  void run();
  // Extends the owner's leases; a failure is logged and the next renewal tries again.
  void renew();

  const std::string path_;
  const std::string owner_;
  const Options options_;
  const std::chrono::milliseconds period_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool holding_ = false;
  bool stopping_ = false;
  std::thread thread_;

  // Used by the keeper's thread only.
  std::optional<SQLite::Database> db_;
  std::unique_ptr<SQLite::Statement> renew_;
};

}  // namespace sluice
