// Scenario 6: a handler that abort()s on one event, and one that always throws.
#include <sys/wait.h>

#include <sluice/sluice.hpp>

#include "ledger.hpp"
#include "pipeline.hpp"
#include "scenario.hpp"

namespace sluice::torture {

namespace {

constexpr int kMaxAttempts = 3;

std::vector<DeadLetter> dead_letters_of(const Pipeline& pipeline) {
  SQLite::Database db = open_database(pipeline.db_path(), {}, OpenMode::kExisting);
  return list_dead_letters(db, {});
}

void check_crashing_handler(const SuiteConfig& config, ScenarioResult& result) {
  Pipeline pipeline(config, 1, false);
  const std::vector<std::string> flags{"--mode", "both", "--drain", "--max-attempts",
                                       std::to_string(kMaxAttempts)};
  long long aborts = 0;
  for (int run = 0; run < 3 * kMaxAttempts; ++run) {
    std::vector<std::string> run_flags = flags;
    run_flags.insert(run_flags.end(),
                     {"--events", run == 0 ? "20" : "0", "--poison-at", run == 0 ? "5" : "-1"});
    auto child = pipeline.start(run_flags);
    const int status = child->wait();
    ++result.runs;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) break;
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) {
      ++aborts;
    } else {
      result.fail("poisoned child ended with " + describe_status(status));
    }
  }
  if (aborts != kMaxAttempts) {
    result.fail("the poison event crashed the process " + std::to_string(aborts) +
                " times, expected max-attempts = " + std::to_string(kMaxAttempts));
  }
  const std::string poison_id = Ledger::read(pipeline.intents_path()).at(5);
  const auto dead = dead_letters_of(pipeline);
  if (dead.size() != 1 || dead[0].event_id != poison_id || dead[0].reason != "crashed") {
    result.fail("expected the poison event as the one dead letter with reason \"crashed\", got " +
                std::to_string(dead.size()) + " dead letters" +
                (dead.empty() ? "" : " (first: reason " + dead[0].reason + ")"));
  }
  // Replayed once the handler is fixed, the poison event is applied like any other.
  pipeline.drain_and_check(result);
}

void check_always_throwing_handler(const SuiteConfig& config, ScenarioResult& result) {
  Pipeline pipeline(config, 1, false);
  const std::string invocations = pipeline.dir().file("invocations.ledger");
  auto child = pipeline.start({"--mode", "both", "--drain", "--events", "10", "--bad-at", "2",
                               "--max-attempts", std::to_string(kMaxAttempts), "--invocations",
                               invocations});
  const int status = child->wait();
  ++result.runs;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    result.fail("always-throwing run ended with " + describe_status(status));
  }
  const auto calls = Ledger::read(invocations).size();
  if (calls != kMaxAttempts) {
    result.fail("the always-throwing handler ran " + std::to_string(calls) +
                " times, expected max-attempts = " + std::to_string(kMaxAttempts));
  }
  const auto dead = dead_letters_of(pipeline);
  if (dead.size() != 1 || dead[0].reason != "exhausted") {
    result.fail("expected one dead letter with reason \"exhausted\"");
  }
  pipeline.drain_and_check(result);
}

}  // namespace

ScenarioResult run_poison(const SuiteConfig& config) {
  ScenarioResult result("6 poison");
  check_crashing_handler(config, result);
  check_always_throwing_handler(config, result);
  result.notes =
      "abort() handler and always-throwing handler, max-attempts=" + std::to_string(kMaxAttempts);
  return result;
}

}  // namespace sluice::torture
