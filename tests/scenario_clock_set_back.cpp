// A clock set back (an edge device corrected by NTP after boot): retries fire at worst early, an
// event held only by its key's order is never stranded until the clock regains its old reading,
// and the worker re-anchors once per step of the clock, not on every step of its own.
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

struct KeyedRun {
  explicit KeyedRun(Fixture& fixture) : f(fixture), worker(f.db, f.options) {
    worker.subscribe("ledger", "t",
                     [this](const Event& e, Context& ctx) {
                       if (failing.erase(e.payload) > 0) return ctx.retry("later");
                       applied.push_back(e.payload);
                     },
                     {.ordered = true});
  }
  Fixture& f;
  Worker worker;
  std::set<std::string> failing;
  std::vector<std::string> applied;
};

}  // namespace

TEST_CASE("after the clock is set back an event held only by key order follows its predecessor") {
  Fixture f;
  KeyedRun run(f);
  run.failing = {"\"k1\""};
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
  KeyedRun run(f);
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
