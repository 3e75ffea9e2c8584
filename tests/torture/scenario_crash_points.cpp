// Scenario 2: abort() at each named crash point of the library (test builds), then restart.
#include <signal.h>
#include <sys/wait.h>

#include <map>
#include <random>

#include "pipeline.hpp"
#include "scenario.hpp"

namespace sluice::torture {

ScenarioResult run_crash_points(const SuiteConfig& config) {
  static const char* const kPoints[] = {
      "after-claim",  "handler-before-write", "handler-after-write", "before-commit",
      "after-commit", "during-backoff",       "during-dead-letter",
  };
  ScenarioResult result("2 named crash points");
  // Unordered: a dead letter would park its key for an ordered consumer until replayed.
  Pipeline pipeline(config, 2, false);
  std::mt19937_64 rng(config.seed * 107);
  const long long per_point = config.count(3, 20);
  std::map<std::string, long long> hits;
  for (const char* point : kPoints) {
    for (long long i = 0; i < per_point; ++i) {
      const std::string at = std::string(point) + ":" + std::to_string(1 + rng() % 2);
      auto child =
          pipeline.start({"--mode", "both", "--drain", "--events", "12", "--seed",
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
  pipeline.drain_and_check(result, {.excused = {}, .dead = -1});
  for (const char* point : kPoints) {
    result.notes +=
        std::string(result.notes.empty() ? "" : " ") + point + "=" + std::to_string(hits[point]);
    if (hits[point] == 0) result.fail(std::string("crash point ") + point + " was never reached");
  }
  return result;
}

}  // namespace sluice::torture
