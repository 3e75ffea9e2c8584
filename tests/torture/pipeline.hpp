// One torture database with its producer ledgers, driven through sluice-torture-child runs,
// and the ledger check after a final fault-free drain.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "scenario.hpp"
#include "temp_dir.hpp"

namespace sluice::torture {

// Not thread-safe.
class Pipeline {
 public:
  Pipeline(const SuiteConfig& config, int consumers, bool ordered);

  const std::string& db_path() const { return db_; }
  const std::string& ledger_path() const { return ledger_; }
  const std::string& intents_path() const { return intents_; }
  const TempDir& dir() const { return dir_; }

  // The flags naming this pipeline's file, ledgers and consumers, followed by `extra`.
  std::vector<std::string> args(const std::vector<std::string>& extra) const;

  // Starts a child with args(extra).
  std::unique_ptr<ChildProcess> start(const std::vector<std::string>& extra,
                                      const ChildProcess::Env& env = {}) const;

  // Intended events whose producer transaction is half there: the app's domain row without the
  // event, or the event without the domain row.
  long long half_done_transactions() const;

  struct Expectations {
    // Acknowledged events allowed to be missing (e.g. the newest commits a power cut took).
    std::set<std::string> excused;
  };

  // Runs a fault-free child that replays every dead letter, delivers everything, prunes all
  // finished history (forced, retention 0) and delivers again; then checks the ledger into
  // `result`: lost, double-applied, unexpected, integrity, and nothing left pending, claimed,
  // dead-lettered or retained.
  void drain_and_check(ScenarioResult& result, const Expectations& expect) const;
  void drain_and_check(ScenarioResult& result) const { drain_and_check(result, Expectations{}); }

 private:
  const SuiteConfig& config_;
  int consumers_;
  bool ordered_;
  TempDir dir_;
  std::string db_;
  std::string ledger_;
  std::string intents_;
};

}  // namespace sluice::torture
