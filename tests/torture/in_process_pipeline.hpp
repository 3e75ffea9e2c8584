// An in-process torture fixture: a sluice file with one in-transaction consumer "c0" whose
// handler writes the domain table, driven on a ManualClock so retries are due on demand.
#pragma once

#include <SQLiteCpp/Database.h>

#include <atomic>
#include <memory>
#include <sluice/sluice.hpp>
#include <string>
#include <vector>

#include "applied_check.hpp"

namespace sluice::torture {

inline constexpr const char* kInProcessTopic = "torture";

// Not thread-safe.
class InProcessPipeline {
 public:
  explicit InProcessPipeline(std::string path);

  const std::string& path() const { return path_; }
  const Options& options() const { return options_; }
  ManualClock& clock() { return *clock_; }

  // Events whose payload says "permanent" fail for good until heal() is called.
  void heal() { *healed_ = true; }
  // Highest ctx.attempt() a successful handler call has seen.
  int max_attempt_applied() const { return *max_attempt_; }

  // Subscribes c0 on `worker` with the domain-writing handler.
  void subscribe(Worker& worker) const;

  // Enqueues `count` events in their own transactions on a connection of its own; returns IDs.
  std::vector<std::string> enqueue(int count, bool permanent = false);

  // One run_until_idle() of a consumer that writes nothing, on the caller's connection.
  static void deliver_once(SQLite::Database& db, const Options& options);

  // Delivers everything due, advancing the clock past any backoff.
  void drain();

  // Puts every dead letter back to pending (replay_dead_letters with no filter).
  void replay_all();

  // The ledger check of c0 against `acked` and `intended`.
  AppliedCheck check(const std::vector<std::string>& acked,
                     const std::vector<std::string>& intended);

 private:
  std::string path_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  Options options_;
  std::shared_ptr<std::atomic<bool>> healed_ = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<std::atomic<int>> max_attempt_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace sluice::torture
