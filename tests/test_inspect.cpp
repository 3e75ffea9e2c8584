#include <doctest/doctest.h>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::Fixture;

TEST_CASE("events are listed by topic, consumer state, time and seq") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("c", "a", [](const Event& e, Context&) {
    if (e.payload == "\"dead\"") throw PermanentError("no");
    if (e.payload == "\"retry\"") throw std::runtime_error("later");
  });
  f.publish("a");
  f.publish("a", "\"dead\"");
  f.publish("a", "\"retry\"");
  f.publish("b");
  worker.run_until_idle();
  f.publish("a");
  CHECK(list_events(f.db, {}).size() == 5);
  CHECK(list_events(f.db, {.topic = "b"}).size() == 1);
  CHECK(list_events(f.db, {.consumer = "c"}).size() == 4);
  CHECK(list_events(f.db, {.consumer = "c", .state = "delivered"}).size() == 1);
  CHECK(list_events(f.db, {.consumer = "c", .state = "dead"}).at(0).payload == "\"dead\"");
  CHECK(list_events(f.db, {.consumer = "c", .state = "retrying"}).at(0).payload == "\"retry\"");
  CHECK(list_events(f.db, {.consumer = "c", .state = "pending"}).size() == 1);
  CHECK(list_events(f.db, {.after_seq = 4}).size() == 1);
  CHECK(list_events(f.db, {.limit = 2}).size() == 2);
  CHECK_THROWS_AS(list_events(f.db, {.state = "dead"}), InvalidArgument);
  CHECK_THROWS_AS(list_events(f.db, {.consumer = "c", .state = "weird"}), InvalidArgument);
  CHECK_THROWS_AS(list_events(f.db, {.consumer = "nobody"}), NotFound);
}

TEST_CASE("an event's delivery statuses and attempt history") {
  Fixture f;
  Worker worker(f.db, f.options);
  int calls = 0;
  worker.subscribe("flaky", "t", [&](const Event&, Context&) {
    if (++calls == 1) throw std::runtime_error("first try fails");
  });
  worker.subscribe("fine", "t", [](const Event&, Context&) {});
  const auto stored = f.publish("t");
  worker.run_until_idle();
  const Event event = find_event(f.db, stored.id);
  auto statuses = delivery_statuses(f.db, event);
  REQUIRE(statuses.size() == 2);
  CHECK(statuses[0].consumer == "fine");
  CHECK(statuses[0].state == "delivered");
  CHECK(statuses[1].state == "retrying");
  CHECK(statuses[1].attempts == 1);
  CHECK(statuses[1].last_error == "first try fails");
  REQUIRE(statuses[1].next_attempt_at.has_value());
  f.clock->advance(std::chrono::seconds(1));
  worker.run_until_idle();
  statuses = delivery_statuses(f.db, event);
  CHECK(statuses[1].state == "delivered");
  const auto history = attempt_history(f.db, event);
  REQUIRE(history.size() == 2);
  CHECK(history[0].outcome == "retry");
  CHECK(history[0].error == "first try fails");
  CHECK(history[1].outcome == "delivered");
  CHECK(history[1].attempt == 2);
  CHECK_THROWS_AS(find_event(f.db, "missing"), NotFound);
}

TEST_CASE("the attempt history keeps every failure, operator action and the delivery in order") {
  Fixture f;
  f.options.retry.max_attempts = 2;
  Worker worker(f.db, f.options);
  int calls = 0;
  worker.subscribe("c", "t", [&](const Event&, Context& ctx) {
    ++calls;
    if (calls == 1) ctx.retry("timeout \"gateway\"\nline two");
    if (calls == 2) ctx.retry("timeout again");
  });
  const auto stored = f.publish("t");
  worker.run_until_idle();
  f.clock->advance(std::chrono::seconds(5));
  CHECK(worker.run_until_idle().dead_lettered == 1);
  f.clock->advance(std::chrono::seconds(5));
  CHECK(replay_dead_letters(f.db, {}, f.options) == 1);
  f.clock->advance(std::chrono::seconds(5));
  CHECK(worker.run_until_idle().delivered == 1);
  const auto history = attempt_history(f.db, find_event(f.db, stored.id));
  REQUIRE(history.size() == 4);
  CHECK(history[0].outcome == "retry");
  CHECK(history[0].attempt == 1);
  CHECK(history[0].error == "timeout \"gateway\"\nline two");
  CHECK(history[1].outcome == "exhausted");
  CHECK(history[1].attempt == 2);
  CHECK(history[1].error == "timeout again");
  CHECK(history[1].at == history[0].at + std::chrono::seconds(5));
  CHECK(history[2].outcome == "replayed");
  CHECK(history[3].outcome == "delivered");
  CHECK(history[3].attempt == 1);
  CHECK(history[3].error.empty());
  // Settled: the delivery row is gone and its log went to sluice_attempts with the delivery.
  CHECK(sluice::test::count(f.db, "sluice_deliveries") == 0);
}

TEST_CASE("the newest event's seq, and claims past their lease while a worker holds one") {
  Fixture f;
  CHECK(newest_event_seq(f.db) == 0);
  Worker worker(f.db, f.options);
  long long now_past_lease = -1;
  long long later_past_lease = -1;
  worker.subscribe("c", "a", [&](const Event&, Context& ctx) {
    now_past_lease = claims_past_lease(ctx.db(), f.clock->now());
    later_past_lease = claims_past_lease(
        ctx.db(), f.clock->now() + f.options.claim_lease + std::chrono::seconds(1));
  });
  f.publish("a");
  const auto newest = f.publish("a");
  CHECK(newest_event_seq(f.db) == newest.seq);
  worker.run_until_idle();
  CHECK(now_past_lease == 0);
  CHECK(later_past_lease == 1);
  CHECK(claims_past_lease(f.db, f.clock->now() + std::chrono::hours(1)) == 0);
}
