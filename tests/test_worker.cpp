#include <doctest/doctest.h>
#include <sqlite3.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "support/fixture.hpp"
#include "support/statement_counter.hpp"
#include "write_lock_holder.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::count_attempts;
using sluice::test::Fixture;
using sluice::test::recording;
using sluice::test::StatementCounter;
using std::chrono::seconds;

TEST_CASE("a subscribed consumer receives each event once and the inbox records it") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("billing", "order.placed", recording("billing"));
  for (int i = 0; i < 10; ++i) f.publish("order.placed", "{\"n\":" + std::to_string(i) + "}");
  const DrainResult result = worker.run_until_idle();
  CHECK(result.delivered == 10);
  CHECK(count(f.db, "applied") == 10);
  CHECK(count(f.db, "sluice_inbox") == 10);
  CHECK(worker.run_until_idle().delivered == 0);
  CHECK(count(f.db, "applied") == 10);
  CHECK(count(f.db, "sluice_claims") == 0);
}

TEST_CASE("a consumer name or subscribed topic with a control character is refused, none stored") {
  Fixture f;
  Worker worker(f.db, f.options);
  for (const std::string bad : {"bill\x1b]0;owned\x07", "bill\x7f",
                                "bill\xC2\x9B"
                                "8m"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(worker.subscribe(bad, "order.placed", recording("billing")),
                         doctest::Contains("the consumer name contains a control character"),
                         InvalidArgument);
    CHECK_THROWS_WITH_AS(worker.subscribe("billing", bad, recording("billing")),
                         doctest::Contains("the topic contains a control character"),
                         InvalidArgument);
  }
  CHECK(count(f.db, "sluice_consumers") == 0);
}

TEST_CASE("an event the inbox already holds is not applied again, its handler's writes undone") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("billing", "order.placed", recording("billing"));
  const std::string id = f.publish("order.placed").id;
  f.publish("order.placed");
  f.db.exec("INSERT INTO sluice_inbox (consumer_id, event_id, delivered_at) SELECT id, '" + id +
            "', 0 FROM sluice_consumers WHERE name = 'billing'");
  const DrainResult result = worker.run_until_idle();
  CHECK(result.delivered == 1);
  CHECK(count(f.db, "applied") == 1);
  CHECK(count(f.db, "sluice_inbox") == 2);
  CHECK(count(f.db, "sluice_deliveries") == 0);
}

TEST_CASE("consumers and subscriptions are recorded in the file") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("billing", "order.placed", recording("billing"));
  worker.subscribe("billing", "order.cancelled", recording("billing"));
  worker.subscribe("email", "order.placed", recording("email"));
  CHECK(count(f.db, "sluice_consumers") == 2);
  CHECK(count(f.db, "sluice_subscriptions") == 3);
  CHECK_THROWS_AS(worker.subscribe("billing", "order.placed", recording("billing")),
                  InvalidArgument);
  CHECK_THROWS_AS(worker.subscribe("billing", "x", recording("billing"), {.ordered = true}),
                  InvalidArgument);
  CHECK_THROWS_AS(worker.subscribe("", "x", recording("billing")), InvalidArgument);
}

TEST_CASE("a consumer registered late starts from now unless asked for the oldest event") {
  Fixture f;
  f.publish("t");
  f.publish("t");
  Worker worker(f.db, f.options);
  worker.subscribe("late", "t", recording("late"));
  worker.subscribe("replayer", "t", recording("replayer"), {.start_from = StartFrom::kOldest});
  f.publish("t");
  worker.run_until_idle();
  CHECK(count(f.db, "applied", "consumer = 'late'") == 1);
  CHECK(count(f.db, "applied", "consumer = 'replayer'") == 3);
}

TEST_CASE("events the handler enqueues commit with its delivery") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("orders", "order.placed", [](const Event& e, Context& ctx) {
    ctx.enqueue({.topic = "invoice.requested", .payload = e.payload});
  });
  worker.subscribe("billing", "invoice.requested", recording("billing"));
  f.publish("order.placed", R"({"order":1})");
  worker.run_until_idle();
  CHECK(count(f.db, "applied", "consumer = 'billing'") == 1);
}

TEST_CASE("a handler that commits or rolls back sluice's transaction is dead-lettered clearly") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("rogue", "t", [](const Event&, Context& ctx) {
    ctx.db().exec("INSERT INTO applied (event_id, consumer) VALUES ('x', 'rogue')");
    ctx.db().exec("COMMIT");
  });
  f.publish("t");
  const DrainResult result = worker.run_until_idle();
  CHECK(result.dead_lettered == 1);
  CHECK(count(f.db, "applied") == 0);
  const auto letters = list_dead_letters(f.db, {});
  REQUIRE(letters.size() == 1);
  CHECK(letters[0].reason == "permanent");
  CHECK(letters[0].last_error.find("commit or roll back") != std::string::npos);
}

TEST_CASE(
    "a worker keeps refusing transaction control after another worker on its connection goes") {
  Fixture f;
  auto earlier = std::make_unique<Worker>(f.db, f.options);
  Worker worker(f.db, f.options);
  worker.subscribe("rogue", "t", [](const Event&, Context& ctx) { ctx.db().exec("COMMIT"); });
  earlier.reset();
  f.publish("t");
  CHECK(worker.run_until_idle().dead_lettered == 1);
  REQUIRE(list_dead_letters(f.db, {}).size() == 1);
  CHECK(list_dead_letters(f.db, {})[0].last_error.find("commit or roll back") != std::string::npos);
}

TEST_CASE("snooze retries later without spending an attempt") {
  Fixture f;
  Worker worker(f.db, f.options);
  int calls = 0;
  worker.subscribe("sleepy", "t", [&](const Event&, Context& ctx) {
    ++calls;
    if (calls <= 5) ctx.snooze(seconds(10));
  });
  f.publish("t");
  for (int i = 0; i < 5; ++i) {
    worker.run_until_idle();
    f.clock->advance(seconds(10));
  }
  CHECK(count(f.db, "sluice_deliveries", "state = 'dead'") == 0);
  worker.run_until_idle();
  CHECK(calls == 6);
  CHECK(consumer_stats(f.db, f.options).at(0).snoozed_total == 5);
  CHECK(consumer_stats(f.db, f.options).at(0).retries_total == 0);
  CHECK(count(f.db, "sluice_inbox") == 1);
}

TEST_CASE("ctx.retry fails the attempt without a throw: writes undone, retried, then exhausted") {
  Fixture f;
  Worker worker(f.db, f.options);
  int calls = 0;
  worker.subscribe("billing", "t", [&](const Event& e, Context& ctx) {
    recording("billing")(e, ctx);
    ctx.retry("gateway busy " + std::to_string(++calls));
  });
  f.publish("t", "{}", "k");
  f.publish("t", "{}", "k");
  CHECK(worker.run_until_idle().retried == 2);
  CHECK(count(f.db, "applied") == 0);
  CHECK(count(f.db, "sluice_inbox") == 0);
  for (int i = 0; i < 10; ++i) {
    f.clock->advance(seconds(30));
    worker.run_until_idle();
  }
  CHECK(calls == 2 * f.options.retry.max_attempts);
  const auto letters = list_dead_letters(f.db, {});
  REQUIRE(letters.size() == 2);
  CHECK(letters[0].reason == "exhausted");
  CHECK(letters[0].attempts == f.options.retry.max_attempts);
  CHECK(letters[0].last_error.rfind("gateway busy ", 0) == 0);
  CHECK(count_attempts(f.db, "retry") == 4);
  CHECK(consumer_stats(f.db, f.options).at(0).retries_total == 4);
}

TEST_CASE("ctx.dead_letter dead-letters at once as permanent; the last request decides") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("c", "t", [&](const Event& e, Context& ctx) {
    recording("c")(e, ctx);
    ctx.snooze(seconds(5));
    ctx.dead_letter("order 42 does not exist");
  });
  f.publish("t");
  CHECK(worker.run_until_idle().dead_lettered == 1);
  CHECK(count(f.db, "applied") == 0);
  const auto letters = list_dead_letters(f.db, {});
  REQUIRE(letters.size() == 1);
  CHECK(letters[0].reason == "permanent");
  CHECK(letters[0].attempts == 1);
  CHECK(letters[0].last_error == "order 42 does not exist");
}

TEST_CASE("an outside-transaction handler's ctx.retry and ctx.dead_letter are recorded") {
  Fixture f;
  Worker worker(f.db, f.options);
  int calls = 0;
  worker.subscribe("mailer", "t",
                   [&](const Event&, Context& ctx) {
                     if (++calls == 1) return ctx.retry("smtp timed out");
                     ctx.dead_letter("mailbox does not exist");
                   },
                   {.mode = DeliveryMode::kOutsideTransaction});
  f.publish("t");
  CHECK(worker.run_until_idle().retried == 1);
  f.clock->advance(seconds(1));
  CHECK(worker.run_until_idle().dead_lettered == 1);
  const auto letters = list_dead_letters(f.db, {});
  REQUIRE(letters.size() == 1);
  CHECK(letters[0].reason == "permanent");
  CHECK(letters[0].attempts == 2);
  CHECK(letters[0].last_error == "mailbox does not exist");
  CHECK(count(f.db, "sluice_inbox") == 0);
}

TEST_CASE("delayed events are not delivered before their not-before time") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("c", "t", recording("c"));
  f.outbox.enqueue_now({.topic = "t", .not_before = f.clock->now() + seconds(60)});
  f.publish("t");
  worker.run_until_idle();
  CHECK(count(f.db, "applied") == 1);
  f.clock->advance(seconds(59));
  worker.run_until_idle();
  CHECK(count(f.db, "applied") == 1);
  f.clock->advance(seconds(1));
  worker.run_until_idle();
  CHECK(count(f.db, "applied") == 2);
}

TEST_CASE("an outside-transaction consumer runs with no transaction and is marked after") {
  Fixture f;
  Worker worker(f.db, f.options);
  std::vector<std::string> sent;
  bool had_transaction = true;
  worker.subscribe("mailer", "t",
                   [&](const Event& e, Context& ctx) {
                     had_transaction = sqlite3_get_autocommit(f.db.getHandle()) == 0;
                     CHECK_THROWS_AS(ctx.db(), TransactionError);
                     sent.push_back(e.id);
                   },
                   {.mode = DeliveryMode::kOutsideTransaction});
  f.publish("t");
  f.publish("t");
  worker.run_until_idle();
  CHECK_FALSE(had_transaction);
  CHECK(sent.size() == 2);
  CHECK(count(f.db, "sluice_inbox") == 2);
  CHECK(consumer_stats(f.db, f.options).at(0).delivered_total == 2);
  worker.run_until_idle();
  CHECK(sent.size() == 2);
}

namespace {

// A batch handler's outcomes: the events whose payload is {"bad":true} rejected for good.
std::vector<Outcome> rejecting_bad(const std::vector<Event>& events) {
  std::vector<Outcome> outcomes;
  for (const Event& e : events) {
    outcomes.push_back(e.payload == R"({"bad":true})" ? Outcome::permanent("rejected")
                                                      : Outcome::done());
  }
  return outcomes;
}

}  // namespace

TEST_CASE("a batch handler gets many events at once and its outcomes are applied per event") {
  Fixture f;
  Worker worker(f.db, f.options);
  std::vector<std::size_t> batch_sizes;
  worker.subscribe_batch("relay", "t",
                         [&](const std::vector<Event>& events) {
                           batch_sizes.push_back(events.size());
                           return rejecting_bad(events);
                         },
                         {.mode = DeliveryMode::kOutsideTransaction});
  for (int i = 0; i < 20; ++i) f.publish("t", i == 7 ? R"({"bad":true})" : "{}");
  const DrainResult result = worker.run_until_idle();
  CHECK(result.delivered == 19);
  CHECK(result.dead_lettered == 1);
  REQUIRE_FALSE(batch_sizes.empty());
  CHECK(batch_sizes.front() == 20);
  CHECK_THROWS_AS(worker.subscribe_batch(
                      "relay2", "t",
                      [](const std::vector<Event>& e) { return std::vector<Outcome>(e.size()); }),
                  InvalidArgument);
}

TEST_CASE("one batch handler for two topics gets alternating events in one batch, in file order") {
  Fixture f;
  Worker worker(f.db, f.options);
  std::vector<std::vector<std::string>> batches;
  worker.subscribe_batch_topics("relay", {"a", "b"},
                                [&](const std::vector<Event>& events) {
                                  auto& topics = batches.emplace_back();
                                  for (const Event& e : events) topics.push_back(e.topic);
                                  return std::vector<Outcome>(events.size());
                                },
                                {.mode = DeliveryMode::kOutsideTransaction});
  for (int i = 0; i < 20; ++i) f.publish(i % 2 == 0 ? "a" : "b", "{}");
  CHECK(worker.run_until_idle().delivered == 20);
  REQUIRE(batches.size() == 1);
  REQUIRE(batches[0].size() == 20);
  for (std::size_t i = 0; i < 20; ++i) CHECK(batches[0][i] == (i % 2 == 0 ? "a" : "b"));
}

TEST_CASE("a batch handler per topic still gets only its own topic's events") {
  Fixture f;
  Worker worker(f.db, f.options);
  std::vector<std::vector<std::string>> batches;
  const BatchHandler handler = [&](const std::vector<Event>& events) {
    auto& topics = batches.emplace_back();
    for (const Event& e : events) topics.push_back(e.topic);
    return std::vector<Outcome>(events.size());
  };
  worker.subscribe_batch("relay", "a", handler, {.mode = DeliveryMode::kOutsideTransaction});
  worker.subscribe_batch("relay", "b", handler, {.mode = DeliveryMode::kOutsideTransaction});
  for (int i = 0; i < 4; ++i) f.publish(i % 2 == 0 ? "a" : "b", "{}");
  CHECK(worker.run_until_idle().delivered == 4);
  CHECK(batches.size() == 4);
  for (const auto& batch : batches) CHECK(batch.size() == 1);
}

TEST_CASE("a list of topics for one batch handler is refused whole, nothing recorded") {
  Fixture f;
  Worker worker(f.db, f.options);
  const BatchHandler handler = [](const std::vector<Event>& e) {
    return std::vector<Outcome>(e.size());
  };
  const ConsumerOptions outside{.mode = DeliveryMode::kOutsideTransaction};
  worker.subscribe_batch("relay", "a", handler, outside);
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {{}, "the list of topics is empty"},
      {{"b", "c", "b"}, "topic 'b' is listed twice"},
      {{"b", "a"}, "already has a handler for topic 'a'"},
      {{"b", ""}, "the topic is empty"},
  };
  for (const auto& [topics, reason] : refused) {
    CAPTURE(reason);
    try {
      worker.subscribe_batch_topics("relay", topics, handler, outside);
      FAIL("accepted");
    } catch (const InvalidArgument& e) {
      CHECK(std::string(e.what()).find(reason) != std::string::npos);
    }
  }
  CHECK(count(f.db, "sluice_subscriptions") == 1);
}

TEST_CASE("an outside batch marks its delivered events seen; a mark already there counts once") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe_batch("relay", "t", rejecting_bad, {.mode = DeliveryMode::kOutsideTransaction});
  std::string seen_before;
  for (int i = 0; i < 100; ++i) {
    const std::string id = f.publish("t", i == 70 ? R"({"bad":true})" : "{}").id;
    if (i == 40) seen_before = id;
  }
  f.db.exec("INSERT INTO sluice_inbox (consumer_id, event_id, delivered_at) SELECT id, '" +
            seen_before + "', 0 FROM sluice_consumers WHERE name = 'relay'");
  const DrainResult result = worker.run_until_idle();
  CHECK(result.delivered == 98);
  CHECK(result.dead_lettered == 1);
  CHECK(count(f.db, "sluice_inbox") == 99);
  CHECK(count(f.db, "sluice_inbox", "delivered_at > 0") == 98);
  CHECK(consumer_stats(f.db, f.options).at(0).delivered_total == 98);
}

namespace {

// Holds the file's write lock from its own thread and connection, on request.
class WriteLockHolder {
 public:
  explicit WriteLockHolder(const std::string& path)
      : thread_([this, path] {
          SQLite::Database db(path, SQLite::OPEN_READWRITE);
          std::unique_lock lock(mutex_);
          while (!quit_) {
            changed_.wait(lock, [&] { return quit_ || wanted_ != holding_; });
            if (wanted_ && !holding_) db.exec("BEGIN IMMEDIATE");
            if (!wanted_ && holding_) db.exec("COMMIT");
            if (holding_ != wanted_) {
              holding_ = wanted_;
              changed_.notify_all();
            }
          }
          if (holding_) db.exec("COMMIT");
        }) {}
  ~WriteLockHolder() {
    {
      std::lock_guard lock(mutex_);
      quit_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  // Returns once the lock is held, or not, as asked.
  void hold(bool wanted) {
    std::unique_lock lock(mutex_);
    wanted_ = wanted;
    changed_.notify_all();
    changed_.wait(lock, [&] { return holding_ == wanted_; });
  }
  bool holding() {
    std::lock_guard lock(mutex_);
    return holding_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool wanted_ = false;
  bool holding_ = false;
  bool quit_ = false;
  std::thread thread_;
};

}  // namespace

TEST_CASE("a batch handler runs for the next batch while the last one's outcomes commit") {
  Fixture f(true);
  f.options.batch_size = 4;  // batches of 2: half a claim
  f.options.busy_timeout = seconds(3);
  WriteLockHolder other_writer(f.dir.file("app.db"));
  Worker worker(f.dir.file("app.db"), f.options);
  std::vector<std::size_t> batches;
  bool second_ran_while_first_commit_waited = false;
  // The first call takes the write lock away, so its batch's commit waits; only the second call,
  // running meanwhile, gives it back.
  worker.subscribe_batch("relay", "t",
                         [&](const std::vector<Event>& events) {
                           batches.push_back(events.size());
                           if (batches.size() == 1) {
                             other_writer.hold(true);
                           } else {
                             second_ran_while_first_commit_waited = other_writer.holding();
                             other_writer.hold(false);
                           }
                           return std::vector<Outcome>(events.size());
                         },
                         {.mode = DeliveryMode::kOutsideTransaction});
  for (int i = 0; i < 4; ++i) f.publish("t");
  CHECK(worker.run_until_idle().delivered == 4);
  CHECK(batches == std::vector<std::size_t>{2, 2});
  CHECK(second_ran_while_first_commit_waited);
  CHECK(count(f.db, "sluice_inbox") == 4);
  CHECK(count(f.db, "sluice_claims") == 0);
}

TEST_CASE("start() refuses a borrowed connection; a started worker wakes on an enqueue") {
  Fixture in_memory;
  Worker borrowed(in_memory.db, in_memory.options);
  CHECK_THROWS_AS(borrowed.start(), TransactionError);

  Fixture f(true);
  Options options = f.options;
  options.poll_interval = std::chrono::hours(1);  // only the in-process wake can deliver in time
  Worker worker(f.dir.file("app.db"), options);
  std::atomic<int> handled{0};
  std::mutex mutex;
  std::condition_variable done;
  worker.subscribe("c", "t", [&](const Event&, Context&) {
    ++handled;
    done.notify_all();
  });
  worker.start();
  f.publish("t");
  {
    std::unique_lock lock(mutex);
    CHECK(done.wait_for(lock, seconds(20), [&] { return handled.load() == 1; }));
  }
  worker.stop();
  CHECK(count(f.db, "sluice_claims") == 0);
  worker.stop();
}

TEST_CASE("stop() finishes the batch in hand and leaves nothing claimed") {
  Fixture f(true);
  Worker worker(f.dir.file("app.db"), f.options);
  std::atomic<int> handled{0};
  worker.subscribe("c", "t", [&](const Event&, Context&) { ++handled; });
  for (int i = 0; i < 2000; ++i) f.publish("t");
  worker.start();
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  while (handled.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  worker.stop();
  CHECK(count(f.db, "sluice_claims") == 0);
  CHECK(count(f.db, "sluice_deliveries", "state = 'claimed'") == 0);
  CHECK(count(f.db, "sluice_inbox") == handled.load());
  Worker again(f.dir.file("app.db"), f.options);
  again.subscribe("c", "t", [&](const Event&, Context&) { ++handled; });
  again.run_until_idle();
  CHECK(handled.load() == 2000);
}

TEST_CASE(
    "a started worker survives another process holding the write lock past its busy timeout") {
  // Counts the worker's error records: each is a step that failed and backed off.
  class ErrorCounter final : public LogSink {
   public:
    void write(LogLevel level, const std::string&, const LogFields&) override {
      if (level == LogLevel::kError) ++errors;
    }
    std::atomic<int> errors{0};
  };
  Fixture f(true);
  Options options = f.options;
  options.busy_timeout = std::chrono::milliseconds(50);
  auto sink = std::make_shared<ErrorCounter>();
  options.log = sink;
  Worker worker(f.dir.file("app.db"), options);
  worker.subscribe("c", "t", recording("c"));
  f.publish("t");
  sluice::testing::WriteLockHolder lock(f.dir.file("app.db"), f.dir.file("python.log"));
  worker.start();
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  while (sink->errors.load() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(sink->errors.load() >= 2);  // it tried again after backing off
  lock.release();
  while (count(f.db, "applied") == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  worker.stop();
  CHECK(count(f.db, "applied") == 1);
}

// A savepoint copies every page its event writes into the statement journal (deliverer.cpp,
// handle_in_transaction): a batch makes none until a handler fails after writing, and then one
// per event for the rest of its claim, the step's first event excepted.
TEST_CASE("a batch makes no savepoint until a handler fails after writing") {
  for (const int batch : {1, 3, 8}) {
    CAPTURE(batch);
    Fixture f;
    f.options.batch_size = batch;
    // A step that outlives its time budget ends early, and a step's first event needs no
    // savepoint: on a slow (sanitizer, loaded) run the 50 ms default split the step and the count
    // read 0. The budget here is what never ends a step of 8.
    f.options.batch_time_budget = std::chrono::hours(1);
    Worker worker(f.db, f.options);
    std::string quiet_failure;
    std::string failure_after_write;
    worker.subscribe("c", "t", [&](const Event& e, Context& ctx) {
      if (e.id == quiet_failure) return ctx.retry("fails before writing");
      recording("c")(e, ctx);
      if (e.id == failure_after_write) ctx.retry("fails after writing");
    });
    std::vector<std::string> ids;
    for (int i = 0; i < 8; ++i) ids.push_back(f.publish("t").id);
    quiet_failure = ids[1];
    failure_after_write = batch == 8 ? ids[4] : "";
    const StatementCounter savepoints(f.db, "SAVEPOINT");
    const DrainResult drained = worker.run_until_idle();
    CHECK(drained.delivered == (batch == 8 ? 6 : 7));
    CHECK(count(f.db, "applied") == drained.delivered);
    // With batch 8, the step runs again from its first event, and each later event that runs a
    // handler gets a savepoint (2, 3, 5, 6, 7; the outcomes of 1 and 4 are known).
    CHECK(savepoints.count() == (batch == 8 ? 5 : 0));
  }
}
