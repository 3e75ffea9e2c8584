// Scenarios 1 and 8: a child producing and delivering to several consumers (one ordered) is
// killed with SIGKILL at random moments and restarted, many times.
#include <sys/wait.h>

#include <random>

#include "pipeline.hpp"
#include "scenario.hpp"

namespace sluice::torture {
namespace {

// Starts a producing and delivering child `kills` times and kills each after a random number of
// progress steps (it produces `events` per run, so at least that many steps always come).
void kill_repeatedly(const Pipeline& pipeline, long long kills, std::mt19937_64& rng,
                     const std::vector<std::string>& faults, ScenarioResult& result) {
  constexpr long long kEventsPerRun = 40;
  for (long long k = 0; k < kills; ++k) {
    std::vector<std::string> flags{"--mode",   "both",
                                   "--events", std::to_string(kEventsPerRun),
                                   "--seed",   std::to_string(rng())};
    flags.insert(flags.end(), faults.begin(), faults.end());
    auto child = pipeline.start(flags);
    const long long steps = 1 + static_cast<long long>(rng() % (2 * kEventsPerRun));
    ++result.runs;
    if (child->wait_progress(steps)) {
      child->kill9();
    } else {
      // One stalled or failed child is enough to fail the row; the rest would only repeat it.
      result.fail("child stalled or ended before its kill: " + describe_status(child->kill9()));
      return;
    }
  }
}

}  // namespace

ScenarioResult run_kill_during_delivery(const SuiteConfig& config) {
  ScenarioResult result("1 kill -9 during delivery");
  Pipeline pipeline(config, 3, true);
  std::mt19937_64 rng(config.seed * 101);
  kill_repeatedly(pipeline, config.count(50, 1000), rng, {"--fail-every", "7"}, result);
  pipeline.drain_and_check(result);
  result.notes = "3 consumers, c0 ordered, kills=" + std::to_string(result.runs);
  return result;
}

ScenarioResult run_per_key_order(const SuiteConfig& config) {
  ScenarioResult result("8 per-key order");
  Pipeline pipeline(config, 1, true);
  std::mt19937_64 rng(config.seed * 103);
  kill_repeatedly(pipeline, config.count(25, 300), rng, {"--keys", "3", "--fail-every", "3"},
                  result);
  pipeline.drain_and_check(result);
  result.notes = "ordered consumer, 3 keys, retries + kills; inversions counted";
  return result;
}

}  // namespace sluice::torture
