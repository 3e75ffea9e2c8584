// An idle worker is idle: with nothing deliverable (a key parked behind a dead letter, a retry
// due later, delayed events) it makes no write transaction; and it never stops short of a due
// event, whatever lies ahead of it in the file.
#include <doctest/doctest.h>

#include <set>

#include "support/fixture.hpp"
#include "support/statement_counter.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::Fixture;
using sluice::test::StatementCounter;
using std::chrono::hours;
using std::chrono::seconds;

namespace {

// An ordered consumer whose handler fails the events named in `failing`.
struct ParkingRun {
  explicit ParkingRun(Fixture& fixture) : f(fixture), worker(f.db, f.options) { subscribe(worker); }
  void subscribe(Worker& w) {
    w.subscribe("ledger", "t",
                [this](const Event& e, Context& ctx) {
                  if (permanent.count(e.payload) > 0) return ctx.dead_letter("rejected");
                  if (transient.count(e.payload) > 0) return ctx.retry("later");
                  applied.push_back(e.payload);
                },
                {.ordered = true});
  }
  Fixture& f;
  Worker worker;
  std::set<std::string> permanent;
  std::set<std::string> transient;
  std::vector<std::string> applied;
};

}  // namespace

TEST_CASE("an idle worker with a key parked behind a dead letter makes no write transaction") {
  Fixture f;
  ParkingRun run(f);
  run.permanent = {"\"k1\""};
  f.publish("t", "\"k1\"", "k");
  f.publish("t", "\"k2\"", "k");
  run.worker.run_until_idle();
  REQUIRE(count(f.db, "sluice_deliveries", "state = 'dead'") == 1);
  {
    StatementCounter writes(f.db, "BEGIN");
    for (int i = 0; i < 5; ++i) CHECK(run.worker.run_until_idle().delivered == 0);
    CHECK(writes.count() == 0);
  }
  // A worker new to the file (a restart) is no different once it has subscribed.
  Worker restarted(f.db, f.options);
  run.subscribe(restarted);
  StatementCounter writes(f.db, "BEGIN");
  restarted.run_until_idle();
  CHECK(writes.count() == 0);
}

TEST_CASE(
    "an idle worker with a key held behind a retry due in an hour makes no write transaction") {
  Fixture f;
  f.options.retry.initial_backoff = hours(1);
  f.options.retry.max_backoff = hours(1);
  ParkingRun run(f);
  run.transient = {"\"k1\""};
  f.publish("t", "\"k1\"", "k");
  f.publish("t", "\"k2\"", "k");
  f.publish("t", "\"j1\"", "j");
  run.worker.run_until_idle();
  CHECK(run.applied == std::vector<std::string>{"\"j1\""});
  StatementCounter writes(f.db, "BEGIN");
  f.clock->advance(std::chrono::minutes(59));
  for (int i = 0; i < 5; ++i) run.worker.run_until_idle();
  CHECK(writes.count() == 0);
  run.transient.clear();
  f.clock->advance(std::chrono::minutes(1));
  run.worker.run_until_idle();
  CHECK(run.applied == std::vector<std::string>{"\"j1\"", "\"k1\"", "\"k2\""});
}

TEST_CASE("run_until_idle delivers a due event behind more delayed events than a batch") {
  Fixture f;
  ParkingRun run(f);
  std::vector<NewEvent> delayed(600);
  for (NewEvent& event : delayed) {
    event = {.topic = "t", .payload = "\"later\"", .not_before = f.clock->now() + hours(1)};
  }
  SQLite::Transaction tx(f.db, SQLite::TransactionBehavior::IMMEDIATE);
  f.outbox.enqueue_batch(delayed);
  tx.commit();
  f.publish("t", "\"now\"");
  CHECK(run.worker.run_until_idle().delivered == 1);
  CHECK(run.applied == std::vector<std::string>{"\"now\""});
}

TEST_CASE("run_until_idle delivers a due event behind 40,000 events of other topics") {
  Fixture f;
  ParkingRun run(f);
  std::vector<NewEvent> others(40'000, NewEvent{.topic = "other", .payload = "{}"});
  SQLite::Transaction tx(f.db, SQLite::TransactionBehavior::IMMEDIATE);
  f.outbox.enqueue_batch(others);
  tx.commit();
  f.publish("t", "\"mine\"");
  CHECK(run.worker.run_until_idle().delivered == 1);
  CHECK(run.applied == std::vector<std::string>{"\"mine\""});
}
