// A deliverer's step reuses what its last commit left in the file (the consumer's cursor, when
// its pending rows are due, the backfill count) only while nothing else has committed: a commit by
// another connection, by another deliverer on the same connection or by the app between two steps
// makes the next step read again.
#include <doctest/doctest.h>

#include "consumer_registry.hpp"
#include "deliverer.hpp"
#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::Fixture;
using sluice::test::recording;

namespace {

Options batch_of_one(Options options) {
  options.batch_size = 1;
  return options;
}

// One deliverer of the in-transaction consumer "c" of topic "t", on `db`.
struct Stepper {
  Stepper(SQLite::Database& db, const Options& options, TimePoint now) : deliverer(db, options) {
    spec.name = "c";
    spec.retry = options.retry;
    spec.id = record_subscription(db, spec.name, "t", RecordedOptions::of(spec.options, spec.retry),
                                  spec.options.start_from, now);
    spec.handlers["t"] = [this, record = recording("c")](const Event& event, Context& ctx) {
      ++calls;  // a second claim of an event calls again, though the inbox undoes its effect
      record(event, ctx);
    };
  }
  bool step() { return deliverer.step(spec, in_hand, false).progressed; }

  Deliverer deliverer;
  ConsumerSpec spec;
  std::optional<Claim> in_hand;
  int calls = 0;
};

// Steps `a` and `b` in turn until neither moves: each step of one commits between two of the
// other's.
void step_in_turn(Stepper& a, Stepper& b) {
  for (int turn = 0; turn < 100; ++turn) {
    const bool a_moved = a.step();
    const bool b_moved = b.step();
    if (!a_moved && !b_moved) return;
  }
}

constexpr int kEvents = 8;

// Steps `a` and `b` in turn over kEvents events: both deliver some, each event once.
void expect_each_claimed_once(Fixture& f, Stepper& a, Stepper& b) {
  step_in_turn(a, b);
  CHECK(a.calls > 0);
  CHECK(b.calls > 0);
  CHECK(a.calls + b.calls == kEvents);
  CHECK(count(f.db, "applied") == kEvents);
  CHECK(f.db.execAndGet("SELECT count(DISTINCT event_id) FROM applied").getInt64() == kEvents);
}

}  // namespace

TEST_CASE("two workers on two connections stepping in turn claim each event once") {
  Fixture f(true);
  const Options options = batch_of_one(f.options);
  SQLite::Database other = open_database(f.dir.file("app.db"), options);
  Stepper a(f.db, options, f.clock->now());
  Stepper b(other, options, f.clock->now());
  for (int i = 0; i < kEvents; ++i) f.publish("t");

  expect_each_claimed_once(f, a, b);
}

TEST_CASE("two deliverers on one connection stepping in turn claim each event once") {
  // PRAGMA data_version does not change with the connection's own commits; the file's data
  // version, which the deliverer asks, does.
  Fixture f;
  const Options options = batch_of_one(f.options);
  Stepper a(f.db, options, f.clock->now());
  Stepper b(f.db, options, f.clock->now());
  for (int i = 0; i < kEvents; ++i) f.publish("t");

  expect_each_claimed_once(f, a, b);
}

TEST_CASE("a retry made due by a commit of the app's between two steps is claimed next") {
  // The deliverer knew of no pending row when it last committed; the app's replay made one.
  Fixture f;
  const Options options = batch_of_one(f.options);
  Stepper a(f.db, options, f.clock->now());
  f.publish("t");
  a.spec.handlers["t"] = [](const Event&, Context& ctx) { ctx.dead_letter("poison"); };
  while (a.step()) {
  }
  REQUIRE(count(f.db, "sluice_deliveries", "state = 'dead'") == 1);
  a.spec.handlers["t"] = recording("c");
  for (int i = 0; i < 3; ++i) f.publish("t");
  CHECK(a.step());  // claims the first of the three
  CHECK(replay_dead_letters(f.db, {.consumer = "c"}, f.options) == 1);
  CHECK(a.step());  // delivers it; the replayed event is due now, so claimed before the other two
  REQUIRE(a.in_hand);
  CHECK_FALSE(a.in_hand->items.front().fresh);
}
