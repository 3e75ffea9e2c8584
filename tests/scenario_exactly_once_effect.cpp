// At-least-once delivery, exactly-once effect: failures and redeliveries never apply an event
// twice, and a failed attempt leaves no trace.
#include <doctest/doctest.h>

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::count_attempts;
using sluice::test::Fixture;
using sluice::test::recording;
using std::chrono::seconds;

TEST_CASE("a handler that throws after its write leaves no trace and applies once on retry") {
  Fixture f;
  Worker worker(f.db, f.options);
  int calls = 0;
  worker.subscribe("billing", "order.placed", [&](const Event& e, Context& ctx) {
    recording("billing")(e, ctx);
    if (++calls == 1) throw std::runtime_error("payment gateway timed out");
  });
  f.publish("order.placed");
  CHECK(worker.run_until_idle().retried == 1);
  CHECK(count(f.db, "applied") == 0);
  CHECK(count(f.db, "sluice_inbox") == 0);
  f.clock->advance(seconds(1));
  CHECK(worker.run_until_idle().delivered == 1);
  CHECK(calls == 2);
  CHECK(count(f.db, "applied") == 1);
}

TEST_CASE("a redelivered event that was already seen has no effect") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("billing", "t", recording("billing"));
  f.publish("t");
  f.publish("t");
  worker.run_until_idle();
  // Redeliver everything: rewind the consumer as a lost acknowledgement would.
  f.db.exec("UPDATE sluice_consumers SET cursor = 0");
  worker.run_until_idle();
  CHECK(count(f.db, "applied") == 2);
  CHECK(count(f.db, "sluice_inbox") == 2);
}

TEST_CASE("fan-out: one consumer's failures never delay, repeat or dead-letter another's") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("billing", "order.placed", recording("billing"));
  worker.subscribe("email", "order.placed",
                   [](const Event&, Context&) { throw std::runtime_error("smtp down"); });
  for (int i = 0; i < 5; ++i) f.publish("order.placed");
  for (int round = 0; round < 4; ++round) {
    worker.run_until_idle();
    f.clock->advance(seconds(60));
  }
  CHECK(count(f.db, "applied", "consumer = 'billing'") == 5);
  CHECK(count(f.db, "sluice_deliveries", "state = 'dead'") == 5);
  const auto stats = consumer_stats(f.db, f.options);
  REQUIRE(stats.size() == 2);
  CHECK(stats[0].consumer == "billing");
  CHECK(stats[0].dead == 0);
  CHECK(stats[0].retries_total == 0);
  CHECK(stats[0].delivered_total == 5);
  CHECK(stats[1].dead == 5);
}

TEST_CASE("the backoff schedule holds under the manual clock") {
  Fixture f;
  f.options.retry.max_attempts = 4;
  Worker worker(f.db, f.options);
  std::vector<TimePoint> attempts;
  worker.subscribe("c", "t", [&](const Event&, Context&) {
    attempts.push_back(f.clock->now());
    throw std::runtime_error("still failing");
  });
  const TimePoint start = f.clock->now();
  f.publish("t");
  for (int ms = 0; ms <= 8000; ms += 250) {
    f.clock->set(start + std::chrono::milliseconds(ms));
    worker.run_until_idle();
  }
  REQUIRE(attempts.size() == 4);
  CHECK(attempts[1] - attempts[0] == seconds(1));
  CHECK(attempts[2] - attempts[1] == seconds(2));
  CHECK(attempts[3] - attempts[2] == seconds(4));
}

TEST_CASE("a permanent error is dead-lettered at once") {
  Fixture f;
  Worker worker(f.db, f.options);
  int calls = 0;
  worker.subscribe("c", "t", [&](const Event&, Context&) {
    ++calls;
    throw PermanentError("order 42 does not exist");
  });
  f.publish("t");
  CHECK(worker.run_until_idle().dead_lettered == 1);
  f.clock->advance(std::chrono::hours(1));
  worker.run_until_idle();
  CHECK(calls == 1);
  const auto letters = list_dead_letters(f.db, {});
  REQUIRE(letters.size() == 1);
  CHECK(letters[0].reason == "permanent");
  CHECK(letters[0].attempts == 1);
  CHECK(letters[0].last_error == "order 42 does not exist");
  CHECK(letters[0].first_failed_at == f.clock->now() - std::chrono::hours(1));
}

TEST_CASE("an event that keeps failing is dead-lettered as exhausted after max attempts") {
  Fixture f;
  Worker worker(f.db, f.options);
  int calls = 0;
  worker.subscribe("c", "t", [&](const Event&, Context&) {
    ++calls;
    throw std::runtime_error("attempt " + std::to_string(calls) + " failed");
  });
  f.publish("t");
  for (int i = 0; i < 10; ++i) {
    worker.run_until_idle();
    f.clock->advance(seconds(30));
  }
  CHECK(calls == f.options.retry.max_attempts);
  const auto letters = list_dead_letters(f.db, {});
  REQUIRE(letters.size() == 1);
  CHECK(letters[0].reason == "exhausted");
  CHECK(letters[0].attempts == f.options.retry.max_attempts);
  CHECK(letters[0].last_error == "attempt 3 failed");
  CHECK(letters[0].last_failed_at > letters[0].first_failed_at);
  CHECK(count_attempts(f.db, "retry") == 2);
  CHECK(count_attempts(f.db, "exhausted") == 1);
}

TEST_CASE("two connections delivering one file at once apply each event exactly once") {
  Fixture f(true);
  const std::string path = f.dir.file("app.db");
  constexpr int kEvents = 3000;
  {
    SQLite::Transaction tx(f.db, SQLite::TransactionBehavior::IMMEDIATE);
    for (int i = 0; i < kEvents; ++i) f.outbox.enqueue({.topic = "t"});
    tx.commit();
  }
  Options options = f.options;
  options.batch_size = 64;
  auto deliver = [&] {
    Worker worker(path, options);
    worker.subscribe("c", "t", recording("c"), {.start_from = StartFrom::kOldest});
    worker.run_until_idle();
  };
  std::thread first(deliver);
  std::thread second(deliver);
  first.join();
  second.join();
  CHECK(count(f.db, "applied") == kEvents);
  CHECK(f.db.execAndGet("SELECT count(*) FROM (SELECT event_id FROM applied GROUP BY event_id "
                        "HAVING count(*) > 1)")
            .getInt() == 0);
  CHECK(count(f.db, "sluice_claims") == 0);
}

TEST_CASE("after the clock is set back an hour a retry fires at once, not an hour late") {
  Fixture f;
  Worker worker(f.db, f.options);
  int calls = 0;
  worker.subscribe("c", "t", [&](const Event&, Context& ctx) {
    ++calls;
    if (ctx.attempt() == 1) throw std::runtime_error("first attempt fails");
  });
  f.publish("t");
  worker.run_until_idle();
  REQUIRE(calls == 1);
  f.clock->advance(-std::chrono::hours(1));
  worker.run_until_idle();
  CHECK(calls == 2);
  CHECK(count(f.db, "sluice_inbox") == 1);
}

// A batch runs without a savepoint per event (deliverer.cpp, handle_in_transaction): a handler
// that fails after writing sends its step back to run again with one per event.
TEST_CASE(
    "in a batch, a handler that fails after its write leaves no trace; the others apply once") {
  Fixture f;
  Worker worker(f.db, f.options);
  std::string failing;
  worker.subscribe("billing", "t", [&](const Event& e, Context& ctx) {
    recording("billing")(e, ctx);
    if (e.id == failing && ctx.attempt() == 1) ctx.retry("the ledger was locked");
  });
  for (int i = 0; i < 6; ++i) {
    const std::string id = f.publish("t").id;
    if (i == 3) failing = id;
  }
  const DrainResult first = worker.run_until_idle();
  CHECK(first.delivered == 5);
  CHECK(first.retried == 1);
  CHECK(count(f.db, "applied") == 5);
  CHECK(count(f.db, "applied", "event_id = '" + failing + "'") == 0);
  CHECK(count(f.db, "sluice_inbox") == 5);
  f.clock->advance(seconds(1));
  CHECK(worker.run_until_idle().delivered == 1);
  CHECK(count(f.db, "applied") == 6);
  CHECK(count(f.db, "applied", "event_id = '" + failing + "'") == 1);
}

TEST_CASE("a handler that fails after creating a table leaves no table behind") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("c", "t", [&](const Event&, Context& ctx) {
    ctx.db().exec("CREATE TABLE side_effect (x)");
    if (ctx.attempt() == 1) ctx.retry("not yet");
  });
  f.publish("t");
  CHECK(worker.run_until_idle().retried == 1);
  CHECK(count(f.db, "sqlite_schema", "name = 'side_effect'") == 0);
  f.clock->advance(seconds(1));
  CHECK(worker.run_until_idle().delivered == 1);
  CHECK(count(f.db, "sqlite_schema", "name = 'side_effect'") == 1);
}

TEST_CASE("a handler that fails before writing costs the rest of its batch no second call") {
  Fixture f;
  Worker worker(f.db, f.options);
  std::map<std::string, int> calls;
  std::string failing;
  worker.subscribe("billing", "t", [&](const Event& e, Context& ctx) {
    ++calls[e.id];
    if (e.id == failing) return ctx.retry("the price list is not there yet");
    recording("billing")(e, ctx);
  });
  for (int i = 0; i < 5; ++i) {
    const std::string id = f.publish("t").id;
    if (i == 2) failing = id;
  }
  const DrainResult drained = worker.run_until_idle();
  CHECK(drained.delivered == 4);
  CHECK(drained.retried == 1);
  CHECK(calls.size() == 5);
  for (const auto& [id, n] : calls) CHECK(n == 1);
  CHECK(count(f.db, "applied") == 4);
}

// A step that rolls back to undo a failed handler's writes runs again: the failure stands
// without a second call, the handlers that succeeded before it run again (their writes went with
// the rollback), and the rest of the claim has a savepoint per event, so none runs a third time.
TEST_CASE("a batch with handlers failing after their writes calls none a third time") {
  Fixture f;
  Worker worker(f.db, f.options);
  std::map<std::string, int> calls;
  std::set<std::string> failing;
  worker.subscribe("billing", "t", [&](const Event& e, Context& ctx) {
    ++calls[e.id];
    recording("billing")(e, ctx);
    if (failing.count(e.id) > 0 && ctx.attempt() == 1) throw std::runtime_error("declined");
  });
  std::vector<std::string> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(f.publish("t").id);
  failing = {ids[2], ids[5]};
  const DrainResult first = worker.run_until_idle();
  CHECK(first.delivered == 6);
  CHECK(first.retried == 2);
  CHECK(count(f.db, "applied") == 6);
  for (const std::string& id : failing) {
    CHECK(calls[id] == 1);
    CHECK(count(f.db, "applied", "event_id = '" + id + "'") == 0);
  }
  // The two before the first failure ran again; nothing after it did.
  CHECK(calls[ids[0]] == 2);
  CHECK(calls[ids[1]] == 2);
  for (std::size_t i : {3u, 4u, 6u, 7u}) CHECK(calls[ids[i]] == 1);
  f.clock->advance(seconds(1));
  CHECK(worker.run_until_idle().delivered == 2);
  CHECK(count(f.db, "applied") == 8);
  CHECK(count(f.db, "applied", "event_id = '" + ids[5] + "'") == 1);
}

// sqlite3_total_changes() counts a statement's rows when it finishes: an INSERT ... RETURNING
// stepped once has written its rows without counting them. Here the handler throws between
// stepping its cached statement and resetting it; its next call resets it first.
TEST_CASE("a handler that fails with a writing statement unfinished leaves no trace") {
  Fixture f;
  Worker worker(f.db, f.options);
  std::optional<SQLite::Statement> cached;
  std::string failing;
  const Handler insert_returning = [&](const Event& e, Context& ctx) {
    if (!cached) {
      cached.emplace(ctx.db(),
                     "INSERT INTO applied (event_id, consumer) VALUES (?1, 'c'), (?1, 'c') "
                     "RETURNING rowid");
    }
    cached->reset();
    cached->bind(1, e.id);
    CHECK(cached->executeStep());
    if (e.id == failing && ctx.attempt() == 1) throw std::runtime_error("the mail server is down");
    cached->reset();
  };
  worker.subscribe("c", "t", insert_returning);
  failing = f.publish("t").id;
  f.publish("t");
  const DrainResult first = worker.run_until_idle();
  CHECK(first.delivered == 1);
  CHECK(first.retried == 1);
  CHECK(count(f.db, "applied", "event_id = '" + failing + "'") == 0);
  CHECK(count(f.db, "applied") == 2);
  f.clock->advance(seconds(1));
  CHECK(worker.run_until_idle().delivered == 1);
  CHECK(count(f.db, "applied", "event_id = '" + failing + "'") == 2);
}

TEST_CASE("a handler that enqueues and then fails leaves no event behind") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("c", "t", recording("c"));
  worker.subscribe("c", "u", [&](const Event&, Context& ctx) {
    NewEvent follow_up;
    follow_up.topic = "follow-up";
    follow_up.payload = "{}";
    ctx.enqueue(follow_up);
    if (ctx.attempt() == 1) ctx.retry("not yet");
  });
  f.publish("t");
  f.publish("u");
  f.publish("t");
  CHECK(worker.run_until_idle().retried == 1);
  CHECK(count(f.db, "sluice_events", "topic = 'follow-up'") == 0);
  f.clock->advance(seconds(1));
  CHECK(worker.run_until_idle().delivered == 1);
  CHECK(count(f.db, "sluice_events", "topic = 'follow-up'") == 1);
}
