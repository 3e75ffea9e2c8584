// Scenario 5: two app processes with workers plus an admin process (ingesting and reading) on
// one file for a bounded time: no SQLITE_BUSY reaches an API caller, every event applied once.
#include <sys/wait.h>

#include <random>

#include "pipeline.hpp"
#include "scenario.hpp"

namespace sluice::torture {

namespace {
constexpr int kExitBusy = 3;
}

ScenarioResult run_contention(const SuiteConfig& config) {
  ScenarioResult result("5 contention");
  Pipeline pipeline(config, 2, true);
  std::mt19937_64 rng(config.seed * 113);
  const std::string events = std::to_string(config.count(150, 2000));
  auto admin = pipeline.start({"--mode", "admin", "--iterations", "100000000"});
  auto app_a = pipeline.start({"--mode", "both", "--drain", "--events", events, "--seed",
                               std::to_string(rng()), "--fail-every", "6"});
  auto app_b = pipeline.start({"--mode", "both", "--drain", "--events", events, "--seed",
                               std::to_string(rng()), "--fail-every", "6"});
  for (auto* app : {app_a.get(), app_b.get()}) {
    const int status = app->wait();
    ++result.runs;
    if (WIFEXITED(status) && WEXITSTATUS(status) == kExitBusy) {
      result.fail("SQLITE_BUSY reached an app process's caller");
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      result.fail("app process ended with " + describe_status(status));
    }
  }
  const long long admin_rounds = admin->progress();
  const int admin_status = admin->kill9();
  ++result.runs;
  if (WIFEXITED(admin_status)) {
    result.fail("admin process ended by itself with " + describe_status(admin_status));
  }
  pipeline.drain_and_check(result);
  result.notes = "2 apps + admin; admin rounds=" + std::to_string(admin_rounds);
  return result;
}

}  // namespace sluice::torture
