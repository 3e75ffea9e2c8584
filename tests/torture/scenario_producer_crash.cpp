// Scenario 3: kill the producer inside the app's domain-write + enqueue transaction; afterwards
// each intended event has both its domain row and its event row, or neither.
#include <random>
#include <sluice/sluice.hpp>

#include "pipeline.hpp"
#include "scenario.hpp"

namespace sluice::torture {

ScenarioResult run_producer_crash(const SuiteConfig& config) {
  ScenarioResult result("3 producer crash");
  Pipeline pipeline(config, 1, false);
  std::mt19937_64 rng(config.seed * 109);
  for (long long k = 0; k < config.count(30, 300); ++k) {
    auto child =
        pipeline.start({"--mode", "produce", "--events", "1000", "--seed", std::to_string(rng())});
    if (child->wait_progress(1 + static_cast<long long>(rng() % 40))) {
      child->kill9();
    } else {
      result.fail("producer stalled or ended before its kill: " + describe_status(child->kill9()));
    }
    ++result.runs;
  }
  result.unexpected += pipeline.half_done_transactions();
  pipeline.drain_and_check(result);
  result.notes = "kills inside the domain-write + enqueue transaction; half-done txs in unexpected";
  return result;
}

}  // namespace sluice::torture
