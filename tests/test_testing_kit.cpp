// The testing kit (sluice/testing.hpp) keeps its promises: synchronous drains that follow
// cascades, time that plays retries out, assertions that fail with what was there, handler
// outcomes, and incidents replayed from a file.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "sluice/sluice.hpp"
#include "sluice/testing.hpp"
#include "support/temp_dir.hpp"

using namespace sluice;
using namespace sluice::testing;
using namespace std::chrono_literals;

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::string what_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const AssertionFailed& e) {
    return e.what();
  }
  FAIL("no AssertionFailed thrown");
  return {};
}

}  // namespace

TEST_CASE("drain delivers the events handlers enqueue, down the whole cascade") {
  Harness h;
  std::vector<std::string> seen;
  h.subscribe("billing", "order.placed", [&](const Event& e, Context& ctx) {
    seen.push_back("billing " + e.key);
    ctx.enqueue({.topic = "order.charged", .key = e.key});
  });
  h.subscribe("shipping", "order.charged", [&](const Event& e, Context& ctx) {
    seen.push_back("shipping " + e.key);
    ctx.enqueue({.topic = "order.shipped", .key = e.key});
  });
  h.subscribe("mail", "order.shipped",
              [&](const Event& e, Context&) { seen.push_back("mail " + e.key); });
  h.enqueue({.topic = "order.placed", .key = "42"});
  CHECK(h.drain().delivered == 3);
  CHECK(seen == std::vector<std::string>{"billing 42", "shipping 42", "mail 42"});
  CHECK(h.drain().delivered == 0);
}

TEST_CASE("advance plays a retry sequence out at each retry's due time") {
  Options options;
  options.retry.max_attempts = 4;
  Harness h(options);
  std::vector<TimePoint> attempts_at;
  h.subscribe("billing", "order.placed", [&](const Event&, Context&) {
    attempts_at.push_back(h.clock().now());
    throw std::runtime_error("card declined");
  });
  const std::string id = h.enqueue({.topic = "order.placed"}).id;
  CHECK(h.drain().retried == 1);
  CHECK(dead_letters_of(h.db(), "billing").empty());

  const TimePoint start = h.clock().now();
  const DrainResult result = h.advance(1h);
  CHECK(result.dead_lettered == 1);
  CHECK(attempts_at.size() == 4);
  // Each retry ran when it fell due, not all at the end of the hour.
  CHECK(attempts_at.back() < start + 1h);
  CHECK(h.clock().now() == start + 1h);
  const DeadLetter dead = require_dead_lettered(h.db(), "billing", id);
  CHECK(dead.reason == "exhausted");
  CHECK(dead.last_error == "card declined");
  CHECK_THROWS_AS(h.advance(-1ms), InvalidArgument);
}

TEST_CASE("advance delivers an event whose not_before falls inside the step, not one after") {
  Harness h;
  std::vector<TimePoint> delivered_at;
  h.subscribe("mail", "reminder",
              [&](const Event&, Context&) { delivered_at.push_back(h.clock().now()); });
  const TimePoint start = h.clock().now();
  h.enqueue({.topic = "reminder", .not_before = start + 10min});
  h.enqueue({.topic = "reminder", .not_before = start + 2h});
  CHECK(h.drain().delivered == 0);
  CHECK(h.advance(1h).delivered == 1);
  CHECK(delivered_at == std::vector<TimePoint>{start + 10min});
}

TEST_CASE("require_enqueued matches topic, key, dedup key and payload as JSON") {
  Harness h;
  h.enqueue({.topic = "order.placed",
             .payload = R"({"order": 42, "total": 1500})",
             .key = "42",
             .dedup_key = "order-42:placed"});
  CHECK(require_enqueued(h.db(), {.topic = "order.placed"}).size() == 1);
  CHECK(require_enqueued(h.db(), {.topic = "order.placed",
                                  .payload = R"({ "total":1500,"order":42 })",
                                  .key = "42",
                                  .dedup_key = "order-42:placed"})
            .size() == 1);
  CHECK(require_enqueued(h.db(), {.topic = "order.placed", .payload_includes = R"({"order":42})"})
            .size() == 1);
  require_not_enqueued(h.db(), {.topic = "order.placed", .payload_includes = R"({"order":43})"});
  require_not_enqueued(h.db(), {.topic = "order.placed", .key = "43"});
  require_not_enqueued(h.db(), {.topic = "order.shipped"});

  const std::string message =
      what_of([&] { require_enqueued(h.db(), {.topic = "order.placed", .key = "43"}); });
  CHECK(message.find("expected an event of topic 'order.placed' with key '43'") !=
        std::string::npos);
  CHECK(message.find("order.placed key '42'") != std::string::npos);  // what was there
  CHECK(what_of([&] {
          require_not_enqueued(h.db(), {.topic = "order.placed"});
        }).find("expected no event of topic 'order.placed'; found 1 event(s)") !=
        std::string::npos);
}

TEST_CASE("a matcher that cannot match anything is refused, not silently empty") {
  Harness h;
  CHECK_THROWS_AS(find_enqueued(h.db(), {}), InvalidArgument);
  CHECK_THROWS_AS(find_enqueued(h.db(), {.topic = "t", .payload = "{oops"}), InvalidArgument);
  CHECK_THROWS_AS(find_enqueued(h.db(), {.topic = "t", .payload_includes = "[1]"}),
                  InvalidArgument);
}

TEST_CASE("require_enqueued_by looks only at the events the call enqueued") {
  Harness h;
  h.enqueue({.topic = "order.placed", .key = "1"});
  require_not_enqueued_by(h.db(), {.topic = "order.placed"}, [] {});
  const auto events = require_enqueued_by(
      h.db(), {.topic = "order.placed"}, [&] { h.enqueue({.topic = "order.placed", .key = "2"}); });
  REQUIRE(events.size() == 1);
  CHECK(events[0].key == "2");
  CHECK_THROWS_AS(require_enqueued_by(h.db(), {.topic = "order.placed"}, [] {}), AssertionFailed);

  const std::int64_t mark = h.mark();
  h.enqueue({.topic = "order.placed", .key = "3"});
  CHECK(find_enqueued(h.db(), {.topic = "order.placed", .after_seq = mark}).size() == 1);
}

TEST_CASE("require_dead_lettered names the consumer's dead letters when the event is not one") {
  Harness h;
  h.subscribe("mail", "order.placed",
              [](const Event&, Context&) { throw PermanentError("invalid address"); });
  const std::string bad = h.enqueue({.topic = "order.placed"}).id;
  h.drain();
  CHECK(require_dead_lettered(h.db(), "mail", bad).reason == "permanent");
  const std::string message = what_of([&] { require_dead_lettered(h.db(), "mail", "other"); });
  CHECK(message.find("expected a dead letter of event other for mail") != std::string::npos);
  CHECK(message.find(bad + " (permanent: invalid address)") != std::string::npos);
  CHECK_THROWS_AS(dead_letters_of(h.db(), "nobody"), NotFound);
}

TEST_CASE("run reports a handler's outcome and keeps its writes only when it is done") {
  Harness h;
  h.db().exec("CREATE TABLE charges (order_id TEXT)");
  const Event event = find_event(h.db(), h.enqueue({.topic = "order.placed", .key = "42"}).id);
  auto charges = [&] { return h.db().execAndGet("SELECT count(*) FROM charges").getInt(); };

  const Outcome done = h.run(
      [](const Event& e, Context& ctx) {
        ctx.db().exec("INSERT INTO charges VALUES ('" + e.key + "')");
        ctx.enqueue({.topic = "order.charged", .key = e.key});
      },
      event);
  CHECK(done.kind == Outcome::Kind::kDone);
  CHECK(charges() == 1);
  require_enqueued(h.db(), {.topic = "order.charged", .key = "42"});

  const auto writes_then = [&](std::function<void(Context&)> fail) {
    return [fail](const Event&, Context& ctx) {
      ctx.db().exec("INSERT INTO charges VALUES ('x')");
      fail(ctx);
    };
  };
  const Outcome retry =
      h.run(writes_then([](Context&) { throw std::runtime_error("gateway timeout"); }), event);
  CHECK(retry.kind == Outcome::Kind::kRetry);
  CHECK(retry.error == "gateway timeout");
  const Outcome permanent =
      h.run(writes_then([](Context&) { throw PermanentError("card stolen"); }), event);
  CHECK(permanent.kind == Outcome::Kind::kPermanent);
  CHECK(permanent.error == "card stolen");
  const Outcome snooze = h.run(writes_then([](Context& ctx) { ctx.snooze(5s); }), event);
  CHECK(snooze.kind == Outcome::Kind::kSnooze);
  CHECK(snooze.delay == 5s);
  CHECK(h.run(writes_then([](Context& ctx) { ctx.dead_letter("no"); }), event).kind ==
        Outcome::Kind::kPermanent);
  CHECK(charges() == 1);  // Every failed attempt's write was rolled back.

  int attempt = 0;
  h.run([&](const Event&, Context& ctx) { attempt = ctx.attempt(); }, event, 3);
  CHECK(attempt == 3);
  const Outcome commits = h.run([](const Event&, Context& ctx) { ctx.db().exec("COMMIT"); }, event);
  CHECK(commits.kind == Outcome::Kind::kPermanent);
}

TEST_CASE("run calls a handler in its consumer's declared mode") {
  Harness h;
  h.db().exec("CREATE TABLE sent (order_id TEXT)");
  const Event event = find_event(h.db(), h.enqueue({.topic = "order.placed", .key = "7"}).id);
  // An outside-transaction handler has no delivery transaction: ctx.db() is an error in
  // production, so it is one here too, and not a write that passes the test.
  const Handler uses_ctx_db = [](const Event& e, Context& ctx) {
    ctx.db().exec("INSERT INTO sent VALUES ('" + e.key + "')");
  };
  h.subscribe("mailer", "order.placed", uses_ctx_db, {.mode = DeliveryMode::kOutsideTransaction});
  const Outcome outside = h.run(uses_ctx_db, event, 1, "mailer");
  CHECK(outside.kind == Outcome::Kind::kRetry);
  CHECK(outside.error.find("runs outside the transaction") != std::string::npos);
  CHECK(h.db().execAndGet("SELECT count(*) FROM sent").getInt() == 0);
  // Outside the transaction the handler's own writes stay whatever it returns.
  const Outcome failed = h.run(
      [&](const Event&, Context&) {
        h.db().exec("INSERT INTO sent VALUES ('own')");
        throw std::runtime_error("smtp down");
      },
      event, 1, "mailer");
  CHECK(failed.kind == Outcome::Kind::kRetry);
  CHECK(h.db().execAndGet("SELECT count(*) FROM sent").getInt() == 1);
  // A consumer the harness does not know runs in-transaction, as before.
  CHECK(h.run(uses_ctx_db, event, 1, "other").kind == Outcome::Kind::kDone);
  CHECK(h.db().execAndGet("SELECT count(*) FROM sent").getInt() == 2);
}

TEST_CASE("assertions say where they were called and the event's actual state") {
  Harness h;
  RetryPolicy retry;
  retry.initial_backoff = 10s;
  retry.jitter = 0;
  retry.max_attempts = 3;
  h.subscribe("billing", "order.placed",
              [](const Event& e, Context&) {
                if (e.key == "bad") throw std::runtime_error("gateway timeout");
              },
              {.retry = retry});
  const std::string good = h.enqueue({.topic = "order.placed", .key = "good"}).id;
  const std::string bad = h.enqueue({.topic = "order.placed", .key = "bad"}).id;
  h.drain();

  CHECK(require_delivered(h.db(), "billing", good).state == "delivered");
  const DeliveryStatus retrying = require_retrying(h.db(), "billing", bad);
  CHECK(retrying.attempts == 1);
  CHECK(require_retrying(h.db(), "billing", bad, h.clock().now() + 10s).last_error ==
        "gateway timeout");

  const int line = __LINE__ + 1;
  const std::string not_dead = what_of([&] { require_dead_lettered(h.db(), "billing", bad); });
  CHECK(not_dead.find("test_testing_kit.cpp:" + std::to_string(line) + ": ") != std::string::npos);
  CHECK(not_dead.find("event " + bad + " is retrying for billing (attempt 1") != std::string::npos);
  CHECK(not_dead.find("gateway timeout") != std::string::npos);
  const std::string not_delivered = what_of([&] { require_delivered(h.db(), "billing", bad); });
  CHECK(not_delivered.find("expected event " + bad + " delivered to billing") != std::string::npos);
  CHECK(not_delivered.find("is retrying") != std::string::npos);
  const std::string wrong_time =
      what_of([&] { require_retrying(h.db(), "billing", bad, h.clock().now() + 5s); });
  CHECK(wrong_time.find("next attempt at") != std::string::npos);
  CHECK(what_of([&] { require_retrying(h.db(), "billing", good); }).find("is delivered") !=
        std::string::npos);
  CHECK(what_of([&] {
          require_delivered(h.db(), "billing", "missing");
        }).find("no event with ID 'missing'") != std::string::npos);
  const int enqueued_line = __LINE__ + 1;
  const std::string none = what_of([&] { require_enqueued(h.db(), {.topic = "nothing"}); });
  CHECK(none.find(":" + std::to_string(enqueued_line) + ": ") != std::string::npos);

  h.advance(1min);
  CHECK(require_dead_lettered(h.db(), "billing", bad).reason == "exhausted");
}

TEST_CASE("an incident file loads into :memory: and replays against a fixed handler") {
  test::TempDir dir;
  const std::string incident = dir.file("incident.db");
  std::string bad;
  {
    // An incident as `sluice export` leaves one: a sluice file with one dead-lettered event.
    SQLite::Database db = open_database(incident);
    Worker worker(db);
    worker.subscribe("billing", "order.placed",
                     [](const Event&, Context&) { throw PermanentError("card declined"); });
    bad = Outbox(db).enqueue_now({.topic = "order.placed", .payload = R"({"order":2})"}).id;
    worker.run_until_idle();
  }
  const std::string before = file_bytes(incident);

  Harness h = Harness::from_incident(incident);
  const Event event = find_event(h.db(), bad);
  CHECK(h.clock().now() >= event.created_at);
  CHECK(require_dead_lettered(h.db(), "billing", bad).last_error == "card declined");

  // The fixed handler, run on the incident's event alone ...
  CHECK(h.run([](const Event&, Context&) {}, event).kind == Outcome::Kind::kDone);
  // ... and through the worker, once the dead letter is replayed.
  std::vector<std::string> handled;
  h.subscribe("billing", "order.placed",
              [&](const Event& e, Context&) { handled.push_back(e.id); });
  CHECK(replay_dead_letters(h.db(), {}, h.options()) == 1);
  CHECK(h.drain().delivered == 1);
  CHECK(handled == std::vector<std::string>{bad});
  CHECK(dead_letters_of(h.db(), "billing").empty());
  CHECK(file_bytes(incident) == before);  // The file was only read.
}

TEST_CASE("loading an incident refuses what is not one, naming the file") {
  test::TempDir dir;
  CHECK_THROWS_AS(Harness::from_incident(dir.file("missing.db")), NotFound);
  const std::string plain = dir.file("plain.db");
  {
    SQLite::Database(plain, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE)
        .exec("CREATE TABLE t (x)");
  }
  try {
    Harness::from_incident(plain);
    FAIL("loaded a file without sluice tables");
  } catch (const InvalidArgument& e) {
    CHECK(std::string(e.what()).find(plain) != std::string::npos);
  }
  const std::string garbage = dir.file("garbage.db");
  std::ofstream(garbage) << "not a database, not even close; long enough to have a header page";
  try {
    Harness::from_incident(garbage);
    FAIL("loaded a file that is not a database");
  } catch (const NotADatabaseError& e) {
    CHECK(std::string(e.what()).find(garbage) != std::string::npos);
  }
}

TEST_CASE("after run, the worker still keeps handlers from ending its delivery transaction") {
  Harness h;
  h.subscribe("billing", "order.placed",
              [](const Event&, Context& ctx) { ctx.db().exec("COMMIT"); });
  const Event event = find_event(h.db(), h.enqueue({.topic = "order.placed"}).id);
  CHECK(h.run([](const Event&, Context&) {}, event).kind == Outcome::Kind::kDone);
  CHECK(h.drain().dead_lettered == 1);
  CHECK(dead_letters_of(h.db(), "billing").at(0).last_error.find("sluice commits it") !=
        std::string::npos);
}
