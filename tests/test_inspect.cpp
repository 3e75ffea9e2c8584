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

TEST_CASE(
    "a time range lists what the creation times say, past the seq window and a clock set back") {
  Fixture f;
  // 25,000 events a millisecond apart, the clock set back 10 s after the 22,000th: the seq
  // window (20,000 events) ends before the range does, and seq order is not time order.
  {
    SQLite::Transaction tx(f.db);
    Outbox outbox(f.db, f.options);
    for (int i = 0; i < 25'000; ++i) {
      if (i == 22'000) f.clock->set(f.clock->now() - std::chrono::seconds(10));
      outbox.enqueue({.topic = "t", .payload = std::to_string(i)});
      f.clock->advance(std::chrono::milliseconds(1));
    }
    tx.commit();
  }
  const TimePoint start = list_events(f.db, {.limit = 1}).at(0).created_at;
  // The same question in plain SQL: every match in seq order.
  const auto expected = [&](const EventFilter& filter) {
    SQLite::Statement query(f.db,
                            std::string("SELECT payload FROM sluice_events WHERE created_at >= ? "
                                        "AND created_at < ? AND seq > ? AND seq < ? ORDER BY seq") +
                                (filter.newest_first ? " DESC" : "") + " LIMIT ?");
    query.bind(1, static_cast<int64_t>(filter.since ? filter.since->time_since_epoch().count()
                                                    : INT64_MIN));
    query.bind(2, static_cast<int64_t>(filter.until ? filter.until->time_since_epoch().count()
                                                    : INT64_MAX));
    query.bind(3, static_cast<int64_t>(filter.after_seq));
    query.bind(4, static_cast<int64_t>(filter.before_seq > 0 ? filter.before_seq : INT64_MAX));
    query.bind(5, filter.limit);
    std::vector<std::string> payloads;
    while (query.executeStep()) payloads.push_back(query.getColumn(0).getString());
    return payloads;
  };
  const auto at = [&](int ms) { return start + std::chrono::milliseconds(ms); };
  const std::vector<EventFilter> filters = {
      {.since = at(0), .limit = 50},
      {.since = at(19'990), .limit = 50},                       // half in the window, half past it
      {.since = at(21'995), .until = at(22'003), .limit = 50},  // before and after the step back
      {.since = at(12'000), .until = at(12'010), .limit = 50},  // events both sides of the step
      {.since = at(24'000), .limit = 100},                      // none in the window
      {.until = at(5), .limit = 50},
      {.since = at(100), .after_seq = 19'000, .limit = 3'000},
      {.since = at(0), .newest_first = true, .limit = 50},
      {.since = at(11'995), .until = at(12'005), .newest_first = true, .limit = 50},
      {.since = at(1'000), .until = at(1'010), .before_seq = 24'000, .newest_first = true},
      {.since = at(30'000), .limit = 50},  // nothing
  };
  for (const EventFilter& filter : filters) {
    std::vector<std::string> listed;
    for (const Event& e : list_events(f.db, filter)) listed.push_back(e.payload);
    CAPTURE(filter.after_seq);
    CAPTURE(filter.before_seq);
    CAPTURE(filter.newest_first);
    CHECK(listed == expected(filter));
  }
}
