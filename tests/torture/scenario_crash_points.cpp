// Scenario 2: abort() at each named crash point of the library (test builds), then restart. Each
// run produces, delivers, replays its dead letters and prunes, so every point is on its path.
#include <signal.h>
#include <sys/wait.h>

#include <map>
#include <random>

#include "pipeline.hpp"
#include "scenario.hpp"

namespace sluice::torture {

ScenarioResult run_crash_points(const SuiteConfig& config) {
  static const char* const kPoints[] = {
      "after-claim",        "handler-before-write", "handler-after-write",
      "before-commit",      "after-commit",         "during-backoff",
      "during-dead-letter", "during-replay",        "during-prune",
  };
  ScenarioResult result("2 named crash points");
  // Unordered: a child's drain waits for everything not dead-lettered, and a dead letter holds
  // back later events of its key for an ordered consumer until the replay after that drain.
  Pipeline pipeline(config, 2, false);
  std::mt19937_64 rng(config.seed * 107);
  const long long per_point = config.count(3, 20);
  std::map<std::string, long long> hits;
  for (const char* point : kPoints) {
    // A run may finish before the n-th pass through its point; retry until enough crashes.
    for (long long tries = 0; hits[point] < per_point && tries < 4 * per_point; ++tries) {
      const std::string at = std::string(point) + ":" + std::to_string(1 + rng() % 2);
      auto child = pipeline.start(
          {"--mode", "both", "--drain", "--replay", "--prune", "--events", "12", "--seed",
           std::to_string(rng()), "--fail-every", "4", "--permanent-every", "4"},
          {{"SLUICE_CRASH_AT", at}});
      const int status = child->wait();
      ++result.runs;
      if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) {
        ++hits[point];
      } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        result.fail(std::string("crash at ") + at + ": child ended with " +
                    describe_status(status));
      }
    }
  }
  pipeline.drain_and_check(result);
  for (const char* point : kPoints) {
    result.notes +=
        std::string(result.notes.empty() ? "" : " ") + point + "=" + std::to_string(hits[point]);
    if (hits[point] < per_point) {
      result.fail(std::string("crash point ") + point + " reached " + std::to_string(hits[point]) +
                  " times, expected " + std::to_string(per_point));
    }
  }
  return result;
}

}  // namespace sluice::torture
