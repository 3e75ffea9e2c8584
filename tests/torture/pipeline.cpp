#include "pipeline.hpp"

#include <sys/wait.h>

#include <sluice/sluice.hpp>

#include "applied_check.hpp"
#include "file_state.hpp"
#include "ledger.hpp"

namespace sluice::torture {

Pipeline::Pipeline(const SuiteConfig& config, int consumers, bool ordered)
    : config_(config),
      consumers_(consumers),
      ordered_(ordered),
      db_(dir_.file("torture.db")),
      ledger_(dir_.file("acked.ledger")),
      intents_(dir_.file("intended.ledger")) {}

std::vector<std::string> Pipeline::args(const std::vector<std::string>& extra) const {
  std::vector<std::string> all{"--db",      db_,      "--ledger",    ledger_,
                               "--intents", intents_, "--consumers", std::to_string(consumers_)};
  if (ordered_) all.push_back("--ordered");
  all.insert(all.end(), extra.begin(), extra.end());
  return all;
}

std::unique_ptr<ChildProcess> Pipeline::start(const std::vector<std::string>& extra,
                                              const ChildProcess::Env& env) const {
  return std::make_unique<ChildProcess>(config_.child_exe, args(extra), env);
}

void Pipeline::drain_and_check(ScenarioResult& result, const Expectations& expect) const {
  {
    auto drain = start({"--mode", "deliver", "--drain", "--no-faults"});
    const int status = drain->wait();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      result.fail("final drain ended with " + describe_status(status));
    }
  }
  SQLite::Database db = open_database(db_, {}, OpenMode::kExisting);
  std::vector<std::string> consumers;
  for (int c = 0; c < consumers_; ++c) consumers.push_back("c" + std::to_string(c));
  const std::vector<std::string> ordered =
      ordered_ ? std::vector<std::string>{"c0"} : std::vector<std::string>{};
  std::set<std::string> excused = expect.excused;
  if (expect.dead < 0) {
    for (const DeadLetterRow& row : dead_letter_rows(db)) excused.insert(row.event_id);
  }
  std::vector<std::string> acked;
  for (std::string& id : Ledger::read(ledger_)) {
    if (excused.count(id) == 0) acked.push_back(std::move(id));
  }
  const AppliedCheck check = check_applied(db, acked, Ledger::read(intents_), consumers, ordered);
  result.events += check.events;
  result.lost += check.lost;
  result.double_applied += check.double_applied;
  result.unexpected += check.unexpected;
  if (check.integrity != "ok") result.integrity = check.integrity;
  if (check.inversions != 0) {
    result.fail(std::to_string(check.inversions) + " per-key order inversions");
  }
  long long dead = 0;
  for (const ConsumerState& s : consumer_states(db)) {
    dead += s.dead;
    if (s.claimed != 0) result.fail(s.consumer + " left " + std::to_string(s.claimed) + " claimed");
    if (s.pending != 0) result.fail(s.consumer + " left " + std::to_string(s.pending) + " pending");
  }
  if (expect.dead >= 0 && dead != expect.dead) {
    result.fail(std::to_string(dead) + " dead letters left, expected " +
                std::to_string(expect.dead));
  }
}

}  // namespace sluice::torture
