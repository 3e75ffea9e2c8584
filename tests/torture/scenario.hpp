// What every torture scenario receives and reports: one row of the suite's table.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sluice::torture {

struct SuiteConfig {
  // Full counts (issue 4's --long) instead of the short CI counts.
  bool long_run = false;
  std::uint64_t seed = 1;
  std::string child_exe;
  // build/cli/sluice if it was built, else empty.
  std::string cli_exe;
  // tests/torture/corpus, replayed through the hostile-payload target.
  std::string corpus_dir;
  // tests/golden/v4.sluice, a file of an older schema version.
  std::string golden_file;

  // Cuts per power-box row (scenario 14) instead of its short or long count; 0: those.
  long long cuts = 0;

  long long count(long long short_count, long long long_count) const {
    return long_run ? long_count : short_count;
  }
};

struct ScenarioResult {
  explicit ScenarioResult(std::string name = "") : scenario(std::move(name)) {}

  std::string scenario;
  long long runs = 0;
  long long events = 0;
  long long lost = 0;
  long long double_applied = 0;
  long long unexpected = 0;
  std::string integrity = "ok";
  // Failures a row's own rule found beyond the four counts (crashes, wrong attempt counts...).
  std::vector<std::string> failures;
  std::string notes;

  bool pass() const {
    return lost == 0 && double_applied == 0 && unexpected == 0 && integrity == "ok" &&
           failures.empty();
  }
  void fail(const std::string& why) { failures.push_back(why); }
};

using Scenario = std::function<ScenarioResult(const SuiteConfig&)>;

ScenarioResult run_kill_during_delivery(const SuiteConfig& config);
ScenarioResult run_crash_points(const SuiteConfig& config);
ScenarioResult run_producer_crash(const SuiteConfig& config);
ScenarioResult run_io_error_sweep(const SuiteConfig& config);
ScenarioResult run_disk_full(const SuiteConfig& config);
ScenarioResult run_contention(const SuiteConfig& config);
ScenarioResult run_poison(const SuiteConfig& config);
ScenarioResult run_clock_jumps(const SuiteConfig& config);
ScenarioResult run_per_key_order(const SuiteConfig& config);
ScenarioResult run_corrupt_files(const SuiteConfig& config);
ScenarioResult run_power_loss_full(const SuiteConfig& config);
ScenarioResult run_power_loss_normal(const SuiteConfig& config);
ScenarioResult run_hostile_payloads(const SuiteConfig& config);
// `shape`: outside1, outside2, sql, relay-lib, relay-cli, checkpoint, prune, replay or boot.
ScenarioResult run_power_box(const SuiteConfig& config, const std::string& shape, bool full);
ScenarioResult run_power_box_migration(const SuiteConfig& config, bool full);

}  // namespace sluice::torture
