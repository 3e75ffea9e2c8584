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

  struct Expectations {
    // Acknowledged events allowed to be missing (e.g. the newest commits a power cut took).
    std::set<std::string> excused;
    // Dead letters that must be left after the drain; negative: any number, whose events are
    // then excused (handlers that fail for good on purpose).
    long long dead = 0;
  };

  // Runs a fault-free child that delivers everything; then checks the ledger into `result`:
  // lost, double-applied, unexpected, integrity, nothing left claimed or pending, no dead
  // letter left beyond the expected ones.
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
