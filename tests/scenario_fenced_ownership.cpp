// Fenced ownership: a worker writes for a claim only while the claim is still its own, and for a
// consumer only while it is still the one it subscribed. A stale owner — resumed after its claim
// was recovered, or still running after its consumer was removed and added again — commits
// nothing and delivers nothing for the new owner. One consumer has one set of options, and a
// topic added with StartFrom::kOldest receives its retained events.
#include <SQLiteCpp/Statement.h>
#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "consumer_registry.hpp"
#include "deliverer.hpp"
#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::Fixture;

namespace {

const ConsumerOptions kOutside{.mode = DeliveryMode::kOutsideTransaction};

// What recovery does to a claim it takes over from a worker it deems dead (Deliverer's
// recover_abandoned): the claimed events become pending retries, the claim row goes. Done here
// by hand, since a live worker's claim is never recovered by sluice itself in one process.
void take_over_claims(SQLite::Database& db) {
  db.exec(
      "INSERT INTO sluice_deliveries (consumer_id, event_seq, state, key, attempts, "
      "next_attempt_at, reason) SELECT c.consumer_id, e.seq, 'pending', e.key, 1, 0, 'crashed' "
      "FROM sluice_claims c JOIN sluice_events e ON e.seq > c.from_seq AND e.seq <= c.to_seq "
      "WHERE true ON CONFLICT DO NOTHING");
  db.exec("DELETE FROM sluice_claims");
}

// A handler that blocks its first call until released, so that a test can act while it runs.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool entered = false;
  bool open = false;

  void pass() {
    std::unique_lock lock(mutex);
    entered = true;
    changed.notify_all();
    changed.wait(lock, [&] { return open; });
  }
  // False if no call came within 30 s.
  bool wait_entered() {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(30), [&] { return entered; });
  }
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    changed.notify_all();
  }
};

}  // namespace

TEST_CASE("a worker resumed after its claim was recovered commits nothing and loses nothing") {
  Fixture f(true);
  const std::string path = f.dir.file("app.db");
  Gate gate;
  std::atomic<int> calls{0};
  Worker stale(path, f.options);
  std::string e1;
  stale.subscribe(
      "mailer", "t",
      [&](const Event& event, Context&) {
        ++calls;
        if (event.id == e1) gate.pass();
      },
      kOutside);
  e1 = f.publish("t").id;
  auto drained = std::async(std::launch::async, [&] { return stale.run_until_idle(); });
  struct Opener {
    Gate& gate;
    ~Opener() { gate.release(); }
  } opener{gate};
  REQUIRE(gate.wait_entered());
  // While its handler runs, another worker (one that deemed it dead) recovers its claim.
  take_over_claims(f.db);
  const std::string e2 = f.publish("t").id;
  const std::string e3 = f.publish("t").id;
  gate.release();
  const DrainResult result = drained.get();
  // The resumed worker's outcome for e1 was not committed (its claim was no longer its own):
  // e1 was delivered from the recoverer's retry, as attempt 2, not marked seen by the stale
  // call. Then it went on with a claim of its own: e2 and e3 delivered, none lost.
  CHECK(result.delivered == 3);
  CHECK(calls.load() == 4);  // e1 twice (an outside effect is at least once), e2, e3
  CHECK(count(f.db, "sluice_inbox") == 3);
  CHECK(count(f.db, "sluice_attempts", "outcome = 'delivered' AND attempt = 2") == 1);
  CHECK(count(f.db, "sluice_attempts", "outcome = 'seen'") == 0);
  CHECK(count(f.db, "sluice_deliveries") == 0);
  CHECK(count(f.db, "sluice_claims") == 0);
}

TEST_CASE("a batch worker resumed after its claim was recovered hands none of it to a handler") {
  Fixture f(true);
  const std::string path = f.dir.file("app.db");
  Gate gate;
  std::atomic<int> first_calls{0};
  std::atomic<int> second_calls{0};
  Worker stale(path, f.options);
  const auto batch = [&](std::atomic<int>& calls, bool stall) {
    return [&calls, &gate, stall](const std::vector<Event>& events) {
      ++calls;
      if (stall && calls.load() == 1) gate.pass();
      return std::vector<Outcome>(events.size(), Outcome::done());
    };
  };
  stale.subscribe_batch("relay", "first", batch(first_calls, true), kOutside);
  stale.subscribe_batch("relay", "second", batch(second_calls, false), kOutside);
  // One claim, two batches (a batch ends where the topic changes): the second would go to its
  // handler on the worker's handler thread while the first one's outcomes commit.
  f.publish("first");
  f.publish("second");
  auto drained = std::async(std::launch::async, [&] { return stale.run_until_idle(); });
  struct Opener {
    Gate& gate;
    ~Opener() { gate.release(); }
  } opener{gate};
  REQUIRE(gate.wait_entered());
  take_over_claims(f.db);
  gate.release();
  const DrainResult result = drained.get();
  // Each event once more from the recoverer's retry; the stalled worker sent nothing of its
  // lost claim's second batch out.
  CHECK(result.delivered == 2);
  CHECK(first_calls.load() == 2);
  CHECK(second_calls.load() == 1);
  CHECK(count(f.db, "sluice_inbox") == 2);
  CHECK(count(f.db, "sluice_claims") == 0);
}

TEST_CASE("a worker resumed after it was presumed dead registers again before it claims") {
  Fixture f(true);
  const std::string path = f.dir.file("app.db");
  Gate gate;
  std::string warm_up;
  std::string first;
  // Claims of the last event naming a worker row that is not in the file: to anyone else, a
  // dead worker's claim, taken over at once.
  std::atomic<long long> orphaned{-1};
  Worker stale(path, f.options);
  stale.subscribe(
      "mailer", "t",
      [&](const Event& event, Context&) {
        if (event.id == first) {
          gate.pass();
        } else if (!first.empty() && event.id != warm_up) {
          SQLite::Database observer(path, SQLite::OPEN_READONLY);
          orphaned = count(observer, "sluice_claims c",
                           "NOT EXISTS (SELECT 1 FROM sluice_workers w WHERE w.id = c.worker_id)");
        }
      },
      kOutside);
  warm_up = f.publish("t").id;
  stale.run_until_idle();
  // The claim that stalls is the worker's second, made once its row was confirmed.
  first = f.publish("t").id;
  auto drained = std::async(std::launch::async, [&] { return stale.run_until_idle(); });
  struct Opener {
    Gate& gate;
    ~Opener() { gate.release(); }
  } opener{gate};
  REQUIRE(gate.wait_entered());
  // Recovery of a presumed-dead worker's last claim forgets the worker's row too.
  take_over_claims(f.db);
  f.db.exec("DELETE FROM sluice_workers");
  f.publish("t");
  gate.release();
  drained.get();
  CHECK(orphaned.load() == 0);
}

namespace {

// A consumer "c" of topic "t" recorded in the file, for a Deliverer driven by hand.
ConsumerSpec recorded_spec(Fixture& f, std::atomic<int>& calls) {
  ConsumerSpec spec;
  spec.name = "c";
  spec.retry = f.options.retry;
  spec.id = record_subscription(f.db, "c", "t", RecordedOptions::of(spec.options, spec.retry),
                                StartFrom::kNow, f.clock->now());
  spec.handlers["t"] = [&calls](const Event&, Context&) { ++calls; };
  return spec;
}

}  // namespace

TEST_CASE("an in-transaction worker whose claim was recovered runs no handler for it") {
  Fixture f(true);
  std::atomic<int> calls{0};
  ConsumerSpec spec = recorded_spec(f, calls);
  Deliverer deliverer(f.db, f.options);
  f.publish("t");
  // The engine claims in one step and delivers in the next: the claim is recovered in between.
  std::optional<Claim> in_hand;
  deliverer.step(spec, in_hand, false);
  REQUIRE(in_hand.has_value());
  take_over_claims(f.db);
  const StepResult stepped = deliverer.step(spec, in_hand, false);
  CHECK_FALSE(in_hand.has_value());
  CHECK(stepped.delivered == 0);
  CHECK(calls.load() == 0);
  CHECK(count(f.db, "sluice_inbox") == 0);
  CHECK(count(f.db, "sluice_deliveries", "reason = 'crashed'") == 1);
}

TEST_CASE("claim ids are never reused, even after the newest claim is deleted") {
  Fixture f(true);
  std::atomic<int> calls{0};
  ConsumerSpec spec = recorded_spec(f, calls);
  Deliverer deliverer(f.db, f.options);
  f.publish("t");
  std::optional<Claim> first;
  deliverer.step(spec, first, false);
  REQUIRE(first.has_value());
  const std::int64_t first_id = first->id;
  deliverer.release(spec, first);
  REQUIRE(count(f.db, "sluice_claims") == 0);
  std::optional<Claim> second;
  deliverer.step(spec, second, false);
  REQUIRE(second.has_value());
  CHECK(second->id > first_id);
}

TEST_CASE("a removed consumer's worker does not deliver a new consumer's events") {
  Fixture f(true);
  const std::string path = f.dir.file("app.db");
  std::atomic<int> v1_calls{0};
  std::atomic<int> v2_calls{0};
  Worker old_worker(path, f.options);
  old_worker.subscribe("reports-v1", "t", [&](const Event&, Context&) { ++v1_calls; });
  old_worker.run_until_idle();
  remove_consumer(f.db, "reports-v1", {.force = true}, f.options);
  Worker new_worker(path, f.options);
  new_worker.subscribe("reports-v2", "t", [&](const Event&, Context&) { ++v2_calls; });
  f.publish("t");
  old_worker.run_until_idle();
  CHECK(v1_calls.load() == 0);
  new_worker.run_until_idle();
  CHECK(v2_calls.load() == 1);
  const std::vector<ConsumerStats> stats = consumer_stats(f.db, f.options);
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].delivered_total == 1);
  // The old worker stopped delivering for the consumer, also once it is added again by name.
  old_worker.run_until_idle();
  CHECK(v1_calls.load() == 0);
}

TEST_CASE("a consumer added again under its old name gets an id never used before") {
  Fixture f(true);
  const RecordedOptions options = RecordedOptions::of({}, f.options.retry);
  const std::int64_t first =
      record_subscription(f.db, "c", "t", options, StartFrom::kNow, f.clock->now());
  remove_consumer(f.db, "c", {.force = true}, f.options);
  const std::int64_t second =
      record_subscription(f.db, "c", "t", options, StartFrom::kNow, f.clock->now());
  CHECK(second > first);
}

TEST_CASE("subscribing an existing consumer with other recorded options is refused") {
  Fixture f(true);
  const std::string path = f.dir.file("app.db");
  Worker ordered(path, f.options);
  ordered.subscribe("ledger", "entry", [](const Event&, Context&) {}, {.ordered = true});
  Worker other(path, f.options);
  std::string error;
  try {
    other.subscribe("ledger", "entry", [](const Event&, Context&) {});
  } catch (const InvalidArgument& e) {
    error = e.what();
  }
  CHECK(error.find("ordered true (asked false)") != std::string::npos);
  // Nothing was written: the consumer is still ordered.
  CHECK(count(f.db, "sluice_consumers", "name = 'ledger' AND ordered = 1") == 1);
  // Asking for nothing in particular (as sluice_subscribe without options does) changes nothing.
  record_subscription(f.db, "ledger", "entry", RecordedOptions{}, StartFrom::kNow, f.clock->now());
  CHECK(count(f.db, "sluice_consumers", "name = 'ledger' AND ordered = 1") == 1);
  // And a differing retry policy names it too.
  CHECK_THROWS_WITH_AS(record_subscription(f.db, "ledger", "entry", {.max_attempts = 9},
                                           StartFrom::kNow, f.clock->now()),
                       doctest::Contains("max_attempts 3 (asked 9)"), InvalidArgument);
}

TEST_CASE("a consumer's backoff is recorded, and a subscription asking another one is refused") {
  Fixture f(true);
  const std::string path = f.dir.file("app.db");
  const auto nothing = [](const Event&, Context&) {};
  const RetryPolicy retry{.max_attempts = 4,
                          .initial_backoff = std::chrono::seconds(30),
                          .multiplier = 3.0,
                          .max_backoff = std::chrono::minutes(5),
                          .jitter = 0.1,
                          .seed = 42};
  Worker worker(path, f.options);
  worker.subscribe("billing", "order", nothing, {.retry = retry});
  SQLite::Statement row(
      f.db,
      "SELECT initial_backoff_ms, max_backoff_ms, backoff_multiplier, "
      "backoff_jitter, backoff_seed FROM sluice_consumers WHERE name = 'billing'");
  REQUIRE(row.executeStep());
  CHECK(row.getColumn(0).getInt64() == 30000);
  CHECK(row.getColumn(1).getInt64() == 300000);
  CHECK(row.getColumn(2).getDouble() == 3.0);
  CHECK(row.getColumn(3).getDouble() == 0.1);
  CHECK(row.getColumn(4).getInt64() == 42);
  row.reset();

  // As sluice_subscribe asks what its options name: the recorded backoff is accepted, another
  // one refused naming it, as a mode or max_attempts is.
  record_subscription(f.db, "billing", "order",
                      {.initial_backoff = std::chrono::seconds(30), .multiplier = 3.0},
                      StartFrom::kNow, f.clock->now());
  CHECK_THROWS_WITH_AS(
      record_subscription(f.db, "billing", "order", {.initial_backoff = Duration(1000)},
                          StartFrom::kNow, f.clock->now()),
      doctest::Contains("initial_backoff_ms 30000 (asked 1000)"), InvalidArgument);
  CHECK_THROWS_WITH_AS(
      record_subscription(f.db, "billing", "order", {.max_backoff = Duration(1000), .jitter = 0.0},
                          StartFrom::kNow, f.clock->now()),
      doctest::Contains("max_backoff_ms 300000 (asked 1000), jitter 0.1 (asked 0.0)"),
      InvalidArgument);

  // The other way round: subscribed from SQL with a backoff, then by a C++ worker with another.
  record_subscription(f.db, "mailer", "user",
                      {.max_attempts = 3, .initial_backoff = Duration(5000), .jitter = 0.0},
                      StartFrom::kNow, f.clock->now());
  Worker other(path, f.options);
  CHECK_THROWS_WITH_AS(other.subscribe("mailer", "user", nothing),
                       doctest::Contains("initial_backoff_ms 5000 (asked 1000)"), InvalidArgument);
  other.subscribe(
      "mailer", "user", nothing,
      {.retry = RetryPolicy{.max_attempts = 3, .initial_backoff = Duration(5000), .jitter = 0.0}});

  // A backoff whose bounds are out of order, counting the defaults, is refused; nothing written.
  CHECK_THROWS_WITH_AS(record_subscription(f.db, "late", "t", {.initial_backoff = Duration(700000)},
                                           StartFrom::kNow, f.clock->now()),
                       doctest::Contains("max_backoff_ms 600000 (recorded or the default) is less "
                                         "than initial_backoff_ms 700000"),
                       InvalidArgument);
  CHECK(count(f.db, "sluice_consumers", "name = 'late'") == 0);
}

TEST_CASE("a topic added with kOldest to an existing consumer delivers its retained events") {
  Fixture f(true);
  const std::string path = f.dir.file("app.db");
  f.publish("b");
  f.publish("b");
  std::atomic<int> a_calls{0};
  std::atomic<int> b_calls{0};
  {
    Worker first(path, f.options);
    first.subscribe("c", "a", [&](const Event&, Context&) { ++a_calls; });
    f.publish("a");
    first.run_until_idle();  // the cursor moves past the two events of b
  }
  // Another instance (a new build, say) adds topic b from the oldest retained event.
  Worker second(path, f.options);
  second.subscribe("c", "b", [&](const Event&, Context&) { ++b_calls; },
                   {.start_from = StartFrom::kOldest});
  second.run_until_idle();
  CHECK(a_calls.load() == 1);
  CHECK(b_calls.load() == 2);
}

TEST_CASE("run_until_idle and start refuse to drive one worker from two threads") {
  Fixture f(true);
  const std::string path = f.dir.file("app.db");
  Gate gate;
  Worker worker(path, f.options);
  worker.subscribe("c", "t", [&](const Event&, Context&) { gate.pass(); });
  f.publish("t");
  auto drained = std::async(std::launch::async, [&] { return worker.run_until_idle(); });
  struct Opener {
    Gate& gate;
    ~Opener() { gate.release(); }
  } opener{gate};
  REQUIRE(gate.wait_entered());
  CHECK_THROWS_AS(worker.start(), InvalidArgument);
  CHECK_THROWS_AS(worker.run_until_idle(), InvalidArgument);
  CHECK_THROWS_AS(worker.subscribe("d", "t", [](const Event&, Context&) {}), InvalidArgument);
  gate.release();
  CHECK(drained.get().delivered == 1);
  // Once the drain returned, either may run.
  worker.start();
  worker.stop();
}
