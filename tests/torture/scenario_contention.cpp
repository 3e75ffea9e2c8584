// Scenario 5: two app processes with workers plus an admin process that replays every dead letter
// and prunes with a short retention (forced) round after round, on one file, for a bounded time:
// no SQLITE_BUSY reaches an API caller, the admin gets its turns, every event is applied once.
#include <sys/wait.h>

#include <random>
#include <sstream>

#include "ledger.hpp"
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
  const std::string admin_log = pipeline.dir().file("admin.log");
  auto admin = pipeline.start({"--mode", "admin", "--iterations", "100000000", "--admin-log",
                               admin_log, "--retention-ms", "20"});
  std::vector<std::unique_ptr<ChildProcess>> apps;
  for (int a = 0; a < 2; ++a) {
    apps.push_back(
        pipeline.start({"--mode", "both", "--drain", "--events", events, "--seed",
                        std::to_string(rng()), "--fail-every", "6", "--permanent-every", "9"}));
  }
  for (auto& app : apps) {
    const int status = app->wait();
    ++result.runs;
    if (WIFEXITED(status) && WEXITSTATUS(status) == kExitBusy) {
      result.fail("SQLITE_BUSY reached an app process's caller");
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      result.fail("app process ended with " + describe_status(status));
    }
  }
  const long long admin_rounds = admin->read_progress();
  const int admin_status = admin->kill9();
  ++result.runs;
  if (WIFEXITED(admin_status) && WEXITSTATUS(admin_status) == kExitBusy) {
    result.fail("SQLITE_BUSY reached the admin process's caller");
  } else if (WIFEXITED(admin_status)) {
    result.fail("admin process ended by itself with " + describe_status(admin_status));
  }
  long long replayed = 0;
  long long pruned = 0;
  for (const std::string& line : Ledger::read(admin_log)) {
    long long r = 0;
    long long p = 0;
    std::istringstream(line) >> r >> p;
    replayed += r;
    pruned += p;
  }
  if (admin_rounds == 0) result.fail("the admin process finished no round while the apps ran");
  if (replayed == 0) result.fail("the admin process replayed no dead letter");
  if (pruned == 0) result.fail("the admin process pruned no event");
  pipeline.drain_and_check(result);
  result.notes = "2 apps + admin; admin rounds=" + std::to_string(admin_rounds) +
                 " replayed=" + std::to_string(replayed) + " pruned=" + std::to_string(pruned);
  return result;
}

}  // namespace sluice::torture
