// Pausing and resuming a consumer (sluice/pause.hpp), and a handler's throttle (sluice::Throttled,
// Context::throttle, Outcome::throttle): no claim while paused, no attempt spent, the claim's
// unstarted rest given back, a pause for a time ending by itself.
#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>

#include "consumer_registry.hpp"
#include "deliverer.hpp"
#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::Fixture;
using sluice::test::recording;
using std::chrono::seconds;

namespace {

const ConsumerStats& stats_of(const std::vector<ConsumerStats>& all, const std::string& name) {
  for (const ConsumerStats& s : all) {
    if (s.consumer == name) return s;
  }
  FAIL("no consumer " << name);
  throw std::logic_error("unreachable");
}

long long attempts_spent(SQLite::Database& db) {
  return db.execAndGet("SELECT coalesce(sum(attempts), 0) FROM sluice_deliveries").getInt64();
}

}  // namespace

TEST_CASE("a paused consumer claims nothing until resumed; stats and the audit log say so") {
  Fixture f;
  Worker worker(f.db, f.options);
  int calls = 0;
  worker.subscribe("mailer", "t", [&](const Event&, Context&) { ++calls; });
  worker.subscribe("billing", "t", recording("billing"));
  pause_consumer(f.db, "mailer", {.note = "mail API down"}, f.options);
  const TimePoint paused_at = f.clock->now();
  for (int i = 0; i < 3; ++i) f.publish("t");
  f.clock->advance(seconds(5));
  worker.run_until_idle();
  CHECK(calls == 0);
  CHECK(count(f.db, "applied") == 3);  // the other consumer is not held back
  CHECK(count(f.db, "sluice_claims") == 0);
  const ConsumerStats paused = stats_of(consumer_stats(f.db, f.options), "mailer");
  CHECK(paused.paused);
  CHECK(paused.paused_since == paused_at);
  CHECK_FALSE(paused.paused_until.has_value());
  CHECK(paused.pause_note == "mail API down");
  CHECK(paused.paused_by == "operator");
  CHECK(paused.pending == 3);
  CHECK_FALSE(stats_of(consumer_stats(f.db, f.options), "billing").paused);
  CHECK(metrics_text(f.db, f.options).find("sluice_paused{consumer=\"mailer\"} 1") !=
        std::string::npos);

  CHECK(resume_consumer(f.db, "mailer", f.options));
  CHECK_FALSE(resume_consumer(f.db, "mailer", f.options));
  worker.run_until_idle();
  CHECK(calls == 3);
  CHECK(attempts_spent(f.db) == 0);
  CHECK_FALSE(stats_of(consumer_stats(f.db, f.options), "mailer").paused);

  const std::vector<AuditEntry> log = list_audit(f.db);
  REQUIRE(log.size() == 3);
  CHECK(log[0].action == "pause");
  CHECK(log[0].filter == R"({"consumer":"mailer"})");
  CHECK(log[0].note == "mail API down");
  CHECK(log[0].count == 1);
  CHECK(log[0].source == "api");
  CHECK(log[1].action == "resume");
  CHECK(log[1].count == 1);
  CHECK(log[2].count == 0);  // resuming a consumer that runs changes nothing
}

TEST_CASE("a pause for a time ends by itself, with no resume") {
  Fixture f;
  Worker worker(f.db, f.options);
  int calls = 0;
  worker.subscribe("mailer", "t", [&](const Event&, Context&) { ++calls; });
  const TimePoint until = f.clock->now() + seconds(60);
  pause_consumer(f.db, "mailer", {.until = until}, f.options);
  f.publish("t");
  f.clock->advance(seconds(59));
  worker.run_until_idle();
  CHECK(calls == 0);
  CHECK(stats_of(consumer_stats(f.db, f.options), "mailer").paused_until == until);
  f.clock->advance(seconds(1));
  worker.run_until_idle();
  CHECK(calls == 1);
  const ConsumerStats ended = stats_of(consumer_stats(f.db, f.options), "mailer");
  CHECK_FALSE(ended.paused);
  CHECK(ended.pause_note.empty());
}

TEST_CASE("pause refuses an unknown consumer and an end in the past, writing nothing") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("mailer", "t", [](const Event&, Context&) {});
  CHECK_THROWS_AS(pause_consumer(f.db, "nobody", {}, f.options), NotFound);
  CHECK_THROWS_WITH_AS(pause_consumer(f.db, "mailer", {.until = f.clock->now()}, f.options),
                       doctest::Contains("not after now"), InvalidArgument);
  CHECK_THROWS_WITH_AS(pause_consumer(f.db, "mailer", {.note = "a\x1b[2Jb"}, f.options),
                       doctest::Contains("control character"), InvalidArgument);
  CHECK_THROWS_AS(resume_consumer(f.db, "nobody", f.options), NotFound);
  CHECK(count(f.db, "sluice_audit") == 0);
  CHECK(count(f.db, "sluice_consumers", "paused_at IS NOT NULL") == 0);
}

TEST_CASE(
    "a pause mid-claim gives back the unstarted rest, no attempt spent; the call in flight "
    "finishes") {
  Fixture f(true);
  Worker worker(f.dir.file("app.db"), f.options);
  std::vector<std::string> handled;
  worker.subscribe("mailer", "t",
                   [&](const Event& event, Context&) {
                     handled.push_back(event.id);
                     // From another connection, as an operator would, while this call is in flight.
                     if (handled.size() == 2) pause_consumer(f.db, "mailer", {}, f.options);
                   },
                   {.mode = DeliveryMode::kOutsideTransaction});
  for (int i = 0; i < 6; ++i) f.publish("t");
  worker.run_until_idle();
  CHECK(handled.size() == 2);
  CHECK(count(f.db, "sluice_inbox") == 2);  // the call in flight finished and committed
  CHECK(count(f.db, "sluice_claims") == 0);
  CHECK(count(f.db, "sluice_deliveries", "state = 'pending' AND reason = 'released'") == 4);
  CHECK(attempts_spent(f.db) == 0);
  resume_consumer(f.db, "mailer", f.options);
  worker.run_until_idle();
  CHECK(handled.size() == 6);
  CHECK(count(f.db, "sluice_deliveries") == 0);
}

TEST_CASE("an in-transaction claim made before a pause is given back before any handler runs") {
  Fixture f;
  ConsumerSpec spec;
  spec.name = "ledger";
  spec.retry = f.options.retry;
  spec.id = record_subscription(f.db, spec.name, "t", RecordedOptions::of(spec.options, spec.retry),
                                spec.options.start_from, f.clock->now());
  int calls = 0;
  spec.handlers["t"] = [&](const Event&, Context&) { ++calls; };
  for (int i = 0; i < 3; ++i) f.publish("t");
  Deliverer deliverer(f.db, f.options);
  std::optional<Claim> in_hand;
  deliverer.step(spec, in_hand, false);
  REQUIRE(in_hand.has_value());
  pause_consumer(f.db, "ledger", {}, f.options);
  deliverer.step(spec, in_hand, false);
  CHECK(calls == 0);
  CHECK_FALSE(in_hand.has_value());
  CHECK(count(f.db, "sluice_claims") == 0);
  CHECK(count(f.db, "sluice_deliveries", "state = 'pending' AND attempts = 0") == 3);
  CHECK_FALSE(deliverer.may_step(spec));
}

TEST_CASE("a started worker wakes when a pause for a time runs out") {
  Fixture f(true);
  Options options = f.options;
  options.clock = system_clock();
  options.poll_interval = std::chrono::hours(1);  // only the pause's own end can wake it in time
  Worker worker(f.dir.file("app.db"), options);
  std::mutex mutex;
  std::condition_variable done;
  std::optional<TimePoint> handled_at;
  worker.subscribe("mailer", "t", [&](const Event&, Context&) {
    std::lock_guard lock(mutex);
    handled_at = system_clock()->now();
    done.notify_all();
  });
  const TimePoint until = system_clock()->now() + std::chrono::milliseconds(300);
  pause_consumer(f.db, "mailer", {.until = until}, options);
  worker.start();
  f.publish("t");
  {
    std::unique_lock lock(mutex);
    REQUIRE(done.wait_for(lock, seconds(20), [&] { return handled_at.has_value(); }));
    CHECK(*handled_at >= until);
  }
  worker.stop();
}

TEST_CASE("a started worker wakes at once for a resume") {
  Fixture f(true);
  Options options = f.options;
  options.poll_interval = std::chrono::hours(1);
  Worker worker(f.dir.file("app.db"), options);
  std::atomic<int> handled{0};
  std::mutex mutex;
  std::condition_variable done;
  worker.subscribe("mailer", "t", [&](const Event&, Context&) {
    ++handled;
    done.notify_all();
  });
  pause_consumer(f.db, "mailer", {}, options);
  f.publish("t");
  worker.start();
  resume_consumer(f.db, "mailer", options);
  {
    std::unique_lock lock(mutex);
    CHECK(done.wait_for(lock, seconds(20), [&] { return handled.load() == 1; }));
  }
  worker.stop();
}

TEST_CASE("Throttled gives the event back with no attempt spent and pauses the whole consumer") {
  Fixture f;
  Worker worker(f.db, f.options);
  std::vector<int> attempts;
  worker.subscribe("mailer", "t", [&](const Event&, Context& ctx) {
    attempts.push_back(ctx.attempt());
    if (attempts.size() == 1) throw Throttled(seconds(30), "429 from the mail API");
  });
  for (int i = 0; i < 4; ++i) f.publish("t");
  worker.run_until_idle();
  CHECK(attempts.size() == 1);  // the rest of the claim went back uncalled
  CHECK(attempts_spent(f.db) == 0);
  ConsumerStats s = stats_of(consumer_stats(f.db, f.options), "mailer");
  CHECK(s.paused);
  CHECK(s.paused_by == "throttle");
  CHECK(s.pause_note == "429 from the mail API");
  CHECK(s.paused_until == f.clock->now() + seconds(30));
  CHECK(s.throttled_total == 1);
  CHECK(s.snoozed_total == 0);
  CHECK(s.retries_total == 0);
  f.clock->advance(seconds(29));
  worker.run_until_idle();
  CHECK(attempts.size() == 1);
  f.clock->advance(seconds(1));
  worker.run_until_idle();
  CHECK(attempts == std::vector<int>{1, 1, 1, 1, 1});
  CHECK(count(f.db, "sluice_inbox") == 4);
}

TEST_CASE("ctx.throttle in an in-transaction handler rolls back its writes and pauses") {
  Fixture f;
  Worker worker(f.db, f.options);
  std::set<std::string> called;
  std::string throttling;
  worker.subscribe("ledger", "t", [&](const Event& event, Context& ctx) {
    called.insert(event.id);
    recording("ledger")(event, ctx);
    if (event.id == throttling) {
      throttling.clear();  // once
      ctx.throttle(seconds(10));
    }
  });
  f.publish("t");
  throttling = f.publish("t").id;
  f.publish("t");
  worker.run_until_idle();
  CHECK(called.size() == 2);  // the third went back uncalled
  CHECK(count(f.db, "applied") == 1);
  CHECK(attempts_spent(f.db) == 0);
  CHECK(stats_of(consumer_stats(f.db, f.options), "ledger").pause_note.empty());
  f.clock->advance(seconds(10));
  worker.run_until_idle();
  CHECK(count(f.db, "applied") == 3);
}

TEST_CASE("a batch handler's throttle gives back its batch and the claim's rest") {
  Fixture f;
  Options options = f.options;
  options.batch_size = 8;  // batches of 4
  Worker worker(f.db, options);
  std::vector<std::size_t> batches;
  worker.subscribe_batch("relay", "t",
                         [&](const std::vector<Event>& events) {
                           batches.push_back(events.size());
                           std::vector<Outcome> outcomes(events.size());
                           if (batches.size() == 1)
                             outcomes[2] = Outcome::throttle(seconds(5), "broker slow");
                           return outcomes;
                         },
                         {.mode = DeliveryMode::kOutsideTransaction});
  for (int i = 0; i < 8; ++i) f.publish("t");
  worker.run_until_idle();
  CHECK(batches == std::vector<std::size_t>{4});
  CHECK(count(f.db, "sluice_inbox") == 3);
  CHECK(count(f.db, "sluice_deliveries", "state = 'pending' AND attempts = 0") == 5);
  CHECK(stats_of(consumer_stats(f.db, options), "relay").throttled_total == 1);
  f.clock->advance(seconds(5));
  worker.run_until_idle();
  CHECK(count(f.db, "sluice_inbox") == 8);
}

TEST_CASE("a throttle does not shorten or replace an operator's pause") {
  Fixture f(true);
  Worker worker(f.dir.file("app.db"), f.options);
  worker.subscribe("mailer", "t",
                   [&](const Event&, Context& ctx) {
                     pause_consumer(f.db, "mailer", {.note = "maintenance"}, f.options);
                     ctx.throttle(seconds(1), "slow");
                   },
                   {.mode = DeliveryMode::kOutsideTransaction});
  f.publish("t");
  worker.run_until_idle();
  f.clock->advance(seconds(2));
  const ConsumerStats s = stats_of(consumer_stats(f.db, f.options), "mailer");
  CHECK(s.paused);
  CHECK(s.paused_by == "operator");
  CHECK(s.pause_note == "maintenance");
  CHECK_FALSE(s.paused_until.has_value());
  CHECK(s.throttled_total == 1);
}
