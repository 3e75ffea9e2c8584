// A clock set back (an edge device corrected by NTP after boot): retries fire at worst early, an
// event held only by its key's order is never stranded until the clock regains its old reading,
// and the worker re-anchors once per step of the clock, not on every step of its own.
#include <doctest/doctest.h>

#include "support/fixture.hpp"
#include "support/ordered_ledger.hpp"
#include "support/statement_counter.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::Fixture;
using sluice::test::OrderedLedger;
using sluice::test::StatementCounter;
using std::chrono::hours;

TEST_CASE("after the clock is set back an event held only by key order follows its predecessor") {
  Fixture f;
  OrderedLedger run(f);
  run.fail_once = {"\"k1\""};
  f.publish("t", "\"k1\"", "k");
  f.publish("t", "\"k2\"", "k");
  run.worker.run_until_idle();
  REQUIRE(run.applied.empty());
  f.clock->advance(-hours(1));
  run.worker.run_until_idle();
  CHECK(run.applied == std::vector<std::string>{"\"k1\"", "\"k2\""});
  CHECK(count(f.db, "sluice_deliveries") == 0);
}

TEST_CASE("after the clock is set back the worker re-anchors once, not on every step") {
  Fixture f;
  OrderedLedger run(f);
  std::vector<NewEvent> delayed(1000);
  for (NewEvent& event : delayed) {
    event = {.topic = "t", .payload = "\"later\"", .not_before = f.clock->now() + hours(48)};
  }
  SQLite::Transaction tx(f.db, SQLite::TransactionBehavior::IMMEDIATE);
  f.outbox.enqueue_batch(delayed);
  tx.commit();
  run.worker.run_until_idle();
  f.clock->advance(-hours(24));
  StatementCounter writes(f.db, "BEGIN");
  for (int i = 0; i < 5; ++i) run.worker.run_until_idle();
  CHECK(writes.count() <= 1);
  CHECK(count(f.db, "sluice_deliveries", "state = 'pending'") == 1000);
}

TEST_CASE("a worker that saw the clock while it had nothing to do re-anchors when it is set back") {
  // A worker of two consumers asks each whether it has work before stepping it. Its reading was
  // once kept only by a step: one that last stepped a consumer before the clock jumped ahead
  // (a device's first NTP sync) did not see the clock set back below a later reading, and a
  // retry another worker scheduled waited its full length after the correction too.
  Fixture f;
  int calls = 0;
  Worker idle(f.db, f.options);
  idle.subscribe("mailer", "t", [&](const Event&, Context&) { ++calls; });
  idle.subscribe("billing", "other", [](const Event&, Context&) {});
  idle.run_until_idle();
  f.clock->advance(hours(1));
  f.publish("t");
  {
    Worker busy(f.db, f.options);
    busy.subscribe("mailer", "t",
                   [&](const Event&, Context& ctx) { ctx.snooze(std::chrono::minutes(10)); });
    busy.subscribe("billing", "other", [](const Event&, Context&) {});
    busy.run_until_idle();
  }
  idle.run_until_idle();  // sees the clock an hour on, nothing due
  REQUIRE(calls == 0);
  f.clock->advance(-std::chrono::minutes(30));
  idle.run_until_idle();
  CHECK(calls == 1);
}
