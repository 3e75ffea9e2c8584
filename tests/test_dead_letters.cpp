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
