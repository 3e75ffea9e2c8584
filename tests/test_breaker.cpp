// The circuit breaker (ConsumerOptions::breaker): it opens after K transient failures in a row,
// lets one probe through after the cool-down, closes on its success and opens again for twice as
// long (capped) on its failure; no attempt is spent while open, and a failed probe spends none.
#include <doctest/doctest.h>

#include <stdexcept>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::Fixture;
using std::chrono::seconds;

namespace {

ConsumerStats breaker_stats_of(SQLite::Database& db, const Options& options,
                               const std::string& name) {
  for (const ConsumerStats& s : consumer_stats(db, options)) {
    if (s.consumer == name) return s;
  }
  FAIL("no consumer " << name);
  throw std::logic_error("unreachable");
}

ConsumerOptions with_breaker() {
  ConsumerOptions options;
  options.mode = DeliveryMode::kOutsideTransaction;
  options.retry = RetryPolicy{.max_attempts = 3, .initial_backoff = seconds(1), .jitter = 0};
  options.breaker = Breaker{.failures = 3, .cool_down = seconds(30), .max_cool_down = seconds(100)};
  return options;
}

long long breaker_attempts_spent(SQLite::Database& db) {
  return db.execAndGet("SELECT coalesce(sum(attempts), 0) FROM sluice_deliveries").getInt64();
}

long long dead_letters(SQLite::Database& db) {
  return db.execAndGet("SELECT count(*) FROM sluice_deliveries WHERE state = 'dead'").getInt64();
}

}  // namespace

TEST_CASE("the breaker opens after K failures in a row, probes, and closes on success") {
  Fixture f;
  Worker worker(f.db, f.options);
  bool down = true;
  int calls = 0;
  worker.subscribe(
      "mailer", "t",
      [&](const Event&, Context& ctx) {
        ++calls;
        if (down) ctx.retry("mail API down");
      },
      with_breaker());
  for (int i = 0; i < 10; ++i) f.publish("t");
  worker.run_until_idle();
  // Three failures open it; the other seven are given back uncalled.
  CHECK(calls == 3);
  ConsumerStats s = breaker_stats_of(f.db, f.options, "mailer");
  CHECK(s.breaker == "open");
  CHECK(s.breaker_failures == 3);
  CHECK(s.breaker_cool_down == seconds(30));
  REQUIRE(s.breaker_open_until.has_value());
  CHECK(*s.breaker_open_until == f.clock->now() + seconds(30));
  CHECK(breaker_attempts_spent(f.db) == 3);
  CHECK(metrics_text(f.db, f.options).find("sluice_breaker_open{consumer=\"mailer\"} 1") !=
        std::string::npos);

  // Still open: retries due after 1 s are not tried.
  f.clock->advance(seconds(10));
  worker.run_until_idle();
  CHECK(calls == 3);

  // Half-open: one probe, which fails: open again for twice as long, no attempt spent.
  f.clock->advance(seconds(21));
  CHECK(breaker_stats_of(f.db, f.options, "mailer").breaker == "half-open");
  worker.run_until_idle();
  CHECK(calls == 4);
  s = breaker_stats_of(f.db, f.options, "mailer");
  CHECK(s.breaker == "open");
  CHECK(s.breaker_cool_down == seconds(60));
  CHECK(breaker_attempts_spent(f.db) == 3);
  // The failed probe is in its attempt log all the same.
  CHECK(f.db.execAndGet("SELECT count(*) FROM sluice_deliveries WHERE history IS NOT NULL AND "
                        "history <> '[]'")
            .getInt() >= 1);

  // Doubling is capped at max_cool_down.
  f.clock->advance(seconds(61));
  worker.run_until_idle();
  CHECK(calls == 5);
  CHECK(breaker_stats_of(f.db, f.options, "mailer").breaker_cool_down == seconds(100));
  f.clock->advance(seconds(101));
  worker.run_until_idle();
  CHECK(calls == 6);
  CHECK(breaker_stats_of(f.db, f.options, "mailer").breaker_cool_down == seconds(100));
  CHECK(dead_letters(f.db) == 0);

  // The outage ends: the probe succeeds, the breaker closes and everything is delivered.
  down = false;
  f.clock->advance(seconds(101));
  worker.run_until_idle();
  s = breaker_stats_of(f.db, f.options, "mailer");
  CHECK(s.breaker == "closed");
  CHECK(s.breaker_failures == 0);
  CHECK_FALSE(s.breaker_open_until.has_value());
  f.clock->advance(seconds(10));
  worker.run_until_idle();
  CHECK(breaker_stats_of(f.db, f.options, "mailer").delivered_total == 10);
  CHECK(dead_letters(f.db) == 0);
}

TEST_CASE("an outage of any length dead-letters nothing with the breaker") {
  Fixture f;
  Worker worker(f.db, f.options);
  int calls = 0;
  worker.subscribe(
      "mailer", "t",
      [&](const Event&, Context&) {
        ++calls;
        throw std::runtime_error("down");
      },
      with_breaker());
  for (int i = 0; i < 5; ++i) f.publish("t");
  for (int i = 0; i < 40; ++i) {
    worker.run_until_idle();
    f.clock->advance(seconds(101));
  }
  CHECK(calls > 20);
  CHECK(dead_letters(f.db) == 0);
  // Only the three that opened it spent an attempt.
  CHECK(breaker_attempts_spent(f.db) == 3);
}

TEST_CASE("PermanentError and dead_letter do not count toward the breaker; a success resets it") {
  Fixture f;
  Worker worker(f.db, f.options);
  int n = 0;
  worker.subscribe(
      "mailer", "t",
      [&](const Event&, Context& ctx) {
        ++n;
        if (n % 3 == 0) return;  // every third succeeds
        if (n % 3 == 1) throw PermanentError("bad payload");
        ctx.retry("flaky");
      },
      with_breaker());
  for (int i = 0; i < 12; ++i) f.publish("t");
  worker.run_until_idle();
  CHECK(n == 12);
  const ConsumerStats s = breaker_stats_of(f.db, f.options, "mailer");
  CHECK(s.breaker == "closed");
  CHECK(s.breaker_failures == 0);
}

TEST_CASE("two workers of one consumer share the breaker through the file") {
  Fixture f(true);
  SQLite::Database other_db = open_database(f.dir.file("app.db"), f.options);
  Worker a(f.db, f.options);
  Worker b(other_db, f.options);
  int calls = 0;
  const auto failing = [&](const Event&, Context& ctx) {
    ++calls;
    ctx.retry("down");
  };
  a.subscribe("mailer", "t", failing, with_breaker());
  b.subscribe("mailer", "t", failing, with_breaker());
  for (int i = 0; i < 2; ++i) f.publish("t");
  a.run_until_idle();
  CHECK(calls == 2);
  CHECK(breaker_stats_of(f.db, f.options, "mailer").breaker_failures == 2);
  f.publish("t");
  f.publish("t");
  b.run_until_idle();  // its first failure is the third in a row: it opens
  CHECK(calls == 3);
  CHECK(breaker_stats_of(f.db, f.options, "mailer").breaker == "open");
  a.run_until_idle();
  b.run_until_idle();
  CHECK(calls == 3);  // neither tries anything while open
  f.clock->advance(seconds(31));
  a.run_until_idle();
  b.run_until_idle();
  CHECK(calls == 4);  // one probe between them
}

TEST_CASE("the breaker is one of the consumer's recorded options") {
  Fixture f;
  Worker a(f.db, f.options);
  a.subscribe(
      "mailer", "t", [](const Event&, Context&) {}, with_breaker());
  Worker b(f.db, f.options);
  ConsumerOptions other = with_breaker();
  other.breaker->failures = 7;
  CHECK_THROWS_WITH_AS(
      b.subscribe(
          "mailer", "t", [](const Event&, Context&) {}, other),
      doctest::Contains("breaker {failures 3, cool_down_ms 30000, max_cool_down_ms 100000} "
                        "(asked {failures 7"),
      InvalidArgument);
  other.breaker->failures = 0;
  CHECK_THROWS_WITH_AS(b.subscribe(
                           "mailer", "t", [](const Event&, Context&) {}, other),
                       "sluice: Breaker.failures must be >= 1", InvalidArgument);
  CHECK(breaker_stats_of(f.db, f.options, "mailer").breaker == "closed");
}

TEST_CASE(
    "a batch ending in a transient failure and then a permanent one opens the breaker "
    "before the next batch goes out") {
  // The next batch of a claim is handed to its handler while this one's outcomes commit, unless
  // they may open the breaker: a retry after the last success does, whatever follows it.
  Fixture f;
  f.options.batch_size = 4;  // batches of 2: half a claim
  Worker worker(f.db, f.options);
  int batches = 0;
  ConsumerOptions options = with_breaker();
  options.breaker->failures = 1;
  worker.subscribe_batch(
      "relay", "t",
      [&](const std::vector<Event>& events) {
        ++batches;
        std::vector<Outcome> outcomes(events.size(), Outcome::done());
        outcomes[0] = Outcome::retry("broker down");
        outcomes[1] = Outcome::permanent("malformed");
        return outcomes;
      },
      options);
  for (int i = 0; i < 8; ++i) f.publish("t");
  worker.run_until_idle();
  CHECK(batches == 1);
  CHECK(breaker_stats_of(f.db, f.options, "relay").breaker == "open");
}
