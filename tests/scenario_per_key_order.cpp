// Per-key ordering: events with one key are handled in enqueue order; a retry holds back only its
// own key; a dead letter parks its key until it is replayed or discarded.
#include <doctest/doctest.h>

#include <set>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::Fixture;
using std::chrono::seconds;

namespace {

struct OrderedRun {
  explicit OrderedRun(Fixture& fixture) : f(fixture), worker(f.db, f.options) {
    worker.subscribe("ledger", "t",
                     [this](const Event& e, Context&) {
                       if (failing.count(e.payload) > 0) {
                         if (permanent) throw PermanentError("rejected " + e.payload);
                         failing.erase(e.payload);
                         throw std::runtime_error("transient " + e.payload);
                       }
                       order.push_back(e.payload);
                     },
                     {.ordered = true});
  }
  void publish(const std::string& key, const std::string& name) {
    f.publish("t", "\"" + name + "\"", key);
  }
  Fixture& f;
  Worker worker;
  std::set<std::string> failing;
  bool permanent = false;
  std::vector<std::string> order;
};

}  // namespace

TEST_CASE("an event waiting for its retry holds back only later events of its key") {
  Fixture f;
  OrderedRun run(f);
  run.failing = {"\"a1\""};
  run.publish("A", "a1");
  run.publish("B", "b1");
  run.publish("A", "a2");
  run.publish("A", "a3");
  run.publish("B", "b2");
  run.worker.run_until_idle();
  CHECK(run.order == std::vector<std::string>{"\"b1\"", "\"b2\""});
  run.publish("A", "a4");
  run.publish("B", "b3");
  run.worker.run_until_idle();
  CHECK(run.order == std::vector<std::string>{"\"b1\"", "\"b2\"", "\"b3\""});
  f.clock->advance(seconds(1));
  run.worker.run_until_idle();
  CHECK(run.order == std::vector<std::string>{"\"b1\"", "\"b2\"", "\"b3\"", "\"a1\"", "\"a2\"",
                                              "\"a3\"", "\"a4\""});
}

TEST_CASE("a delayed event holds back the later events of its key claimed with it") {
  Fixture f;
  OrderedRun run(f);
  f.outbox.enqueue_now(
      {.topic = "t", .payload = "\"a1\"", .key = "A", .not_before = f.clock->now() + seconds(5)});
  run.publish("A", "a2");
  run.publish("B", "b1");
  run.publish("A", "a3");
  run.worker.run_until_idle();
  CHECK(run.order == std::vector<std::string>{"\"b1\""});
  f.clock->advance(seconds(5));
  run.worker.run_until_idle();
  CHECK(run.order == std::vector<std::string>{"\"b1\"", "\"a1\"", "\"a2\"", "\"a3\""});
}

TEST_CASE("a dead letter parks its key until discarded; other keys keep flowing") {
  Fixture f;
  OrderedRun run(f);
  run.failing = {"\"a1\""};
  run.permanent = true;
  run.publish("A", "a1");
  run.publish("A", "a2");
  run.publish("B", "b1");
  run.worker.run_until_idle();
  CHECK(run.order == std::vector<std::string>{"\"b1\""});
  CHECK(consumer_stats(f.db, f.options)[0].parked_keys == 1);
  f.clock->advance(std::chrono::hours(1));
  run.worker.run_until_idle();
  CHECK(run.order.size() == 1);
  CHECK(discard_dead_letters(f.db, {}, "a1 was a test order", f.options) == 1);
  run.worker.run_until_idle();
  CHECK(run.order == std::vector<std::string>{"\"b1\"", "\"a2\""});
  CHECK(consumer_stats(f.db, f.options)[0].parked_keys == 0);
}

TEST_CASE("a replayed dead letter is handled before the events its key held back") {
  Fixture f;
  OrderedRun run(f);
  run.failing = {"\"a1\""};
  run.permanent = true;
  run.publish("A", "a1");
  run.publish("A", "a2");
  run.worker.run_until_idle();
  CHECK(run.order.empty());
  run.failing.clear();
  CHECK(replay_dead_letters(f.db, {}, f.options) == 1);
  run.worker.run_until_idle();
  CHECK(run.order == std::vector<std::string>{"\"a1\"", "\"a2\""});
}

TEST_CASE("an unordered consumer does not hold keys back") {
  Fixture f;
  Worker worker(f.db, f.options);
  std::vector<std::string> order;
  bool failed = false;
  worker.subscribe("fast", "t", [&](const Event& e, Context&) {
    if (!failed) {
      failed = true;
      throw std::runtime_error("once");
    }
    order.push_back(e.payload);
  });
  f.publish("t", "1", "A");
  f.publish("t", "2", "A");
  worker.run_until_idle();
  CHECK(order == std::vector<std::string>{"2"});
}

TEST_CASE("a batch consumer keeps per-key order while its next batch runs ahead of a commit") {
  Fixture f;
  f.options.batch_size = 4;  // batches of 2, the next prepared before the last one commits
  Worker worker(f.db, f.options);
  std::set<std::string> failing = {"\"a1\"", "\"b2\""};
  std::vector<std::string> order;
  worker.subscribe_batch("relay", "t",
                         [&](const std::vector<Event>& events) {
                           std::vector<Outcome> outcomes;
                           for (const Event& e : events) {
                             if (failing.erase(e.payload) > 0) {
                               outcomes.push_back(Outcome::retry("transient " + e.payload));
                             } else {
                               order.push_back(e.payload);
                               outcomes.push_back(Outcome::done());
                             }
                           }
                           return outcomes;
                         },
                         {.mode = DeliveryMode::kOutsideTransaction, .ordered = true});
  for (const char* name : {"a1", "b1", "a2", "b2", "a3", "b3", "c1", "a4", "b4", "c2"}) {
    f.publish("t", std::string("\"") + name + "\"", std::string(1, name[0]));
  }
  worker.run_until_idle();
  CHECK(order == std::vector<std::string>{"\"b1\"", "\"c1\"", "\"c2\""});
  f.clock->advance(seconds(1));
  worker.run_until_idle();
  auto of_key = [&](char key) {
    std::vector<std::string> handled;
    for (const auto& payload : order)
      if (payload[1] == key) handled.push_back(payload);
    return handled;
  };
  CHECK(of_key('a') == std::vector<std::string>{"\"a1\"", "\"a2\"", "\"a3\"", "\"a4\""});
  CHECK(of_key('b') == std::vector<std::string>{"\"b1\"", "\"b2\"", "\"b3\"", "\"b4\""});
  CHECK(order.size() == 10);
  CHECK(count(f.db, "sluice_deliveries") == 0);
}

TEST_CASE(
    "per-key order holds when the time budget cuts the delivery transaction after a failure") {
  Fixture f;
  // A budget of 0 ends every delivery transaction after one event: what a handler slower than the
  // budget does, deterministically.
  f.options.batch_time_budget = Duration(0);
  OrderedRun run(f);
  run.failing = {"\"k1\""};
  run.publish("k", "k1");
  run.publish("k", "k2");
  run.publish("k", "k3");
  run.worker.run_until_idle();
  CHECK(run.order.empty());
  f.clock->advance(seconds(1));
  run.worker.run_until_idle();
  CHECK(run.order == std::vector<std::string>{"\"k1\"", "\"k2\"", "\"k3\""});
}

TEST_CASE("a batch handler's event after a failed one of its key is held back, not completed") {
  Fixture f;
  Worker worker(f.db, f.options);
  std::vector<std::string> completed;  // in the order the handler reported them done
  bool fail_first = true;
  worker.subscribe_batch("relay", "t",
                         [&](const std::vector<Event>& events) {
                           std::vector<Outcome> outcomes;
                           for (const Event& e : events) {
                             if (e.payload == "\"k1\"" && fail_first) {
                               fail_first = false;
                               outcomes.push_back(Outcome::retry("broker down"));
                             } else {
                               completed.push_back(e.payload);
                               outcomes.push_back(Outcome::done());
                             }
                           }
                           return outcomes;
                         },
                         {.mode = DeliveryMode::kOutsideTransaction, .ordered = true});
  f.publish("t", "\"k1\"", "k");
  f.publish("t", "\"k2\"", "k");
  worker.run_until_idle();
  // k2 ran (an outside handler's effect is at least once) but is not recorded delivered: it is
  // delivered again after k1.
  CHECK(count(f.db, "sluice_inbox") == 0);
  f.clock->advance(seconds(1));
  worker.run_until_idle();
  CHECK(completed == std::vector<std::string>{"\"k2\"", "\"k1\"", "\"k2\""});
  CHECK(count(f.db, "sluice_inbox") == 2);
  CHECK(count(f.db, "sluice_deliveries") == 0);
}
