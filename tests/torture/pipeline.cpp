#include "pipeline.hpp"

#include <SQLiteCpp/Statement.h>
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

long long Pipeline::half_done_transactions() const {
  SQLite::Database db = open_database(db_, {}, OpenMode::kExisting);
  db.exec(kOrdersTableSql);
  SQLite::Statement orders(db, "SELECT count(*) FROM torture_orders WHERE event_id = ?");
  long long half_done = 0;
  for (const std::string& id : Ledger::read(intents_)) {
    orders.bind(1, id);
    orders.executeStep();
    const bool domain_row = orders.getColumn(0).getInt64() != 0;
    orders.reset();
    if (domain_row != event_stored(db, id)) ++half_done;
  }
  return half_done;
}

void Pipeline::drain_and_check(ScenarioResult& result, const Expectations& expect) const {
  {
    std::vector<std::string> flags{"--mode",   "deliver", "--drain",
                                   "--replay", "--prune", "--no-faults"};
    {
      // One consumer, one set of options: the final drain subscribes with those the scenario's
      // children recorded (they all run with the same).
      SQLite::Database db = open_database(db_, {}, OpenMode::kExisting);
      SQLite::Statement recorded(db, "SELECT max_attempts FROM sluice_consumers LIMIT 1");
      if (recorded.executeStep()) {
        flags.push_back("--max-attempts");
        flags.push_back(std::to_string(recorded.getColumn(0).getInt()));
      }
    }
    auto drain = start(flags);
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
  std::vector<std::string> acked;
  for (std::string& id : Ledger::read(ledger_)) {
    if (expect.excused.count(id) == 0) acked.push_back(std::move(id));
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
  for (const ConsumerStats& s : consumer_stats(db)) {
    if (s.claimed != 0) result.fail(s.consumer + " left " + std::to_string(s.claimed) + " claimed");
    if (s.pending != 0) result.fail(s.consumer + " left " + std::to_string(s.pending) + " pending");
    if (s.dead != 0) {
      result.fail(s.consumer + " left " + std::to_string(s.dead) + " dead letters after replay");
    }
  }
  if (const long long claims = claims_left(db); claims != 0) {
    result.fail(std::to_string(claims) + " claim records left after the final drain");
  }
  EventFilter any;
  any.limit = 1;
  if (!list_events(db, any).empty()) {
    result.fail("events retained after delivering everything and pruning with retention 0");
  }
}

}  // namespace sluice::torture
