#include <doctest/doctest.h>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::Fixture;
using sluice::test::recording;

namespace {

// Two consumers; "billing" rejects payloads marked bad, "email" rejects everything at first.
struct DeadLetterSetup {
  explicit DeadLetterSetup(Fixture& fixture) : f(fixture), worker(f.db, f.options) {
    worker.subscribe("billing", "order.placed", [this](const Event& e, Context& ctx) {
      if (reject && e.payload.find("bad") != std::string::npos) {
        throw PermanentError("card declined for " + e.payload);
      }
      recording("billing")(e, ctx);
    });
    worker.subscribe("email", "order.placed", [this](const Event& e, Context& ctx) {
      if (reject) throw PermanentError("mailbox full");
      recording("email")(e, ctx);
    });
  }
  Fixture& f;
  Worker worker;
  bool reject = true;
};

}  // namespace

TEST_CASE("dead letters are listed with their reason and filtered") {
  Fixture f;
  DeadLetterSetup setup(f);
  const auto bad = f.publish("order.placed", R"({"bad":1})");
  f.publish("order.placed", R"({"good":1})");
  setup.worker.run_until_idle();
  CHECK(list_dead_letters(f.db, {}).size() == 3);
  CHECK(list_dead_letters(f.db, {.consumer = "billing"}).size() == 1);
  CHECK(list_dead_letters(f.db, {.error_contains = "mailbox"}).size() == 2);
  CHECK(list_dead_letters(f.db, {.event_ids = {bad.id}}).size() == 2);
  CHECK(list_dead_letters(f.db, {.topic = "other"}).empty());
  CHECK(list_dead_letters(f.db, {.since = f.clock->now() + std::chrono::seconds(1)}).empty());
  CHECK_THROWS_AS(list_dead_letters(f.db, {.consumer = "nobody"}), NotFound);
}

TEST_CASE("replay puts matching dead letters back with attempts reset; they deliver once") {
  Fixture f;
  DeadLetterSetup setup(f);
  f.publish("order.placed", R"({"bad":1})");
  setup.worker.run_until_idle();
  setup.reject = false;
  CHECK(replay_dead_letters(f.db, {.consumer = "email"}, f.options) == 1);
  CHECK(count(f.db, "sluice_deliveries", "state = 'pending' AND attempts = 0") == 1);
  setup.worker.run_until_idle();
  CHECK(count(f.db, "applied", "consumer = 'email'") == 1);
  CHECK(count(f.db, "applied", "consumer = 'billing'") == 0);
  CHECK(list_dead_letters(f.db, {}).size() == 1);
  CHECK(replay_dead_letters(f.db, {.consumer = "email"}, f.options) == 0);
}

TEST_CASE("discard keeps an audit record with the note and needs one") {
  Fixture f;
  DeadLetterSetup setup(f);
  f.publish("order.placed", R"({"bad":1})");
  setup.worker.run_until_idle();
  CHECK_THROWS_AS(discard_dead_letters(f.db, {}, "", f.options), InvalidArgument);
  CHECK(discard_dead_letters(f.db, {.consumer = "billing"}, "refunded by hand", f.options) == 1);
  CHECK(list_dead_letters(f.db, {}).size() == 1);
  const auto all = list_dead_letters(f.db, {.include_discarded = true});
  REQUIRE(all.size() == 2);
  const auto& audit = all[0].discarded ? all[0] : all[1];
  CHECK(audit.discarded);
  CHECK(audit.note == "refunded by hand");
  CHECK(count(f.db, "sluice_attempts", "outcome = 'discarded' AND error = 'refunded by hand'") ==
        1);
}

namespace {

// A consumer "c" of topic "t" that dead-letters every event at once, with `dead` dead letters made.
struct FailingForGood {
  FailingForGood(Fixture& fixture, int dead) : f(fixture), worker(f.db, f.options) {
    worker.subscribe("c", "t",
                     [](const Event&, Context&) { throw PermanentError("still broken"); });
    for (int i = 0; i < dead; ++i) f.publish("t");
    worker.run_until_idle();
  }
  Fixture& f;
  Worker worker;
};

// (event, consumer) pairs with more than one attempt row of `outcome`.
long long repeated(SQLite::Database& db, const std::string& outcome) {
  return count(db, "(SELECT 1 FROM sluice_attempts WHERE outcome = '" + outcome +
                       "' GROUP BY event_seq, consumer_id HAVING count(*) > 1)");
}

}  // namespace

TEST_CASE(
    "replay returns while a worker keeps dead-lettering: each dead letter of its start once") {
  Fixture f;
  constexpr int kDead = 500;  // more than one of replay's short transactions
  FailingForGood setup(f, kDead);
  REQUIRE(count(f.db, "sluice_deliveries", "state = 'dead'") == kDead);
  // Between replay's transactions the worker fails every replayed event again at once. A replay
  // that re-selects "the first dead letters" never ends; the test stops it after kDead rounds.
  long long rounds = 0;
  const long long replayed = replay_dead_letters(f.db, {}, f.options, [&](long long done) {
    if (++rounds > kDead)
      throw std::runtime_error("replay still running after " + std::to_string(done) + " replays");
    setup.worker.run_until_idle();
  });
  CHECK(replayed == kDead);
  CHECK(count(f.db, "sluice_attempts", "outcome = 'replayed'") == kDead);
  CHECK(repeated(f.db, "replayed") == 0);
  setup.worker.run_until_idle();
  CHECK(count(f.db, "sluice_deliveries", "state = 'dead'") == kDead);
}

TEST_CASE("discard leaves alone the dead letters made while it runs") {
  Fixture f;
  constexpr int kDead = 450;
  FailingForGood setup(f, kDead);
  // After each of discard's transactions a new event is dead-lettered; a discard that re-selects
  // would take it too, and keep going: the test stops it after kDead rounds.
  long long rounds = 0;
  const long long discarded =
      discard_dead_letters(f.db, {}, "known bad batch", f.options, [&](long long done) {
        if (++rounds > kDead)
          throw std::runtime_error("discard still running after " + std::to_string(done) +
                                   " discards");
        f.publish("t");
        setup.worker.run_until_idle();
      });
  CHECK(discarded == kDead);
  CHECK(count(f.db, "sluice_deliveries", "state = 'discarded'") == kDead);
  CHECK(count(f.db, "sluice_deliveries", "state = 'dead'") == rounds);  // the new ones
  CHECK(repeated(f.db, "discarded") == 0);
}
