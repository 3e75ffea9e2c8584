// Time at the extremes: delays, leases, retentions and clocks at the ends of what a Duration or
// TimePoint can hold are clamped or refused, never wrapped around into the past.
#include <doctest/doctest.h>

#include <filesystem>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::Fixture;
using sluice::test::TempDir;
using std::chrono::hours;
using std::chrono::seconds;

namespace {

// Handler calls after which a test's handler stops postponing: a delay that wrapped around into
// the past then fails the test instead of spinning run_until_idle forever.
constexpr int kSpinning = 100;

}  // namespace

TEST_CASE("a snooze of Duration::max() is not due at once") {
  Fixture f;
  Worker worker(f.db, f.options);
  int calls = 0;
  worker.subscribe("sleepy", "t", [&](const Event&, Context& ctx) {
    if (++calls < kSpinning) ctx.snooze(Duration::max());
  });
  f.publish("t");
  worker.run_until_idle();
  CHECK(calls == 1);
  CHECK(count(f.db, "sluice_deliveries", "state = 'pending'") == 1);
  f.clock->advance(hours(24 * 365 * 1000));
  worker.run_until_idle();
  CHECK(calls == 1);
}

TEST_CASE("a snooze of Duration::min() is due at once, as a snooze of zero") {
  Fixture f;
  Worker worker(f.db, f.options);
  int calls = 0;
  worker.subscribe("eager", "t", [&](const Event&, Context& ctx) {
    if (++calls == 1) ctx.snooze(Duration::min());
  });
  f.publish("t");
  worker.run_until_idle();
  CHECK(calls == 2);
  CHECK(count(f.db, "sluice_inbox") == 1);
}

TEST_CASE("a retry after a huge max_backoff is scheduled at the end of time, not in the past") {
  Fixture f;
  f.options.retry.initial_backoff = Duration::max();
  f.options.retry.max_backoff = Duration::max();
  f.options.retry.jitter = 0.5;
  Worker worker(f.db, f.options);
  int calls = 0;
  worker.subscribe("failing", "t", [&](const Event&, Context& ctx) {
    if (++calls < kSpinning) ctx.retry("not yet");
  });
  f.publish("t");
  worker.run_until_idle();
  CHECK(calls == 1);
  CHECK(count(f.db, "sluice_deliveries", "state = 'pending' AND attempts = 1") == 1);
}

TEST_CASE("a clock near TimePoint::max: a retry and a snooze past it clamp to the end") {
  Fixture f;
  f.clock->set(TimePoint::max() - hours(2));
  f.options.retry.initial_backoff = hours(1);
  f.options.retry.max_backoff = hours(1);
  Worker worker(f.db, f.options);
  int calls = 0;
  worker.subscribe("late", "t", [&](const Event&, Context& ctx) {
    if (++calls == 1) {
      ctx.retry("once");
    } else if (calls < kSpinning) {
      ctx.snooze(hours(2));
    }
  });
  f.publish("t");
  worker.run_until_idle();
  CHECK(calls == 1);
  f.clock->advance(hours(1));
  worker.run_until_idle();
  CHECK(calls == 2);
  CHECK(count(f.db, "sluice_deliveries", "state = 'pending'") == 1);
}

TEST_CASE("stats' lag from an event made near TimePoint::min is clamped, not negative") {
  Fixture f;
  f.clock->set(TimePoint::min() + seconds(1));
  Worker worker(f.db, f.options);
  worker.subscribe("app", "t", [](const Event&, Context&) {});
  f.publish("t");
  f.clock->set(TimePoint::max() - seconds(1));
  const auto stats = consumer_stats(f.db, f.options);
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].lag == Duration::max());
}

TEST_CASE("events waiting for a handler longer than all time: none, not every one") {
  Fixture f;
  f.clock->set(TimePoint::min() + seconds(10));
  {
    // A build with a handler for "t" recorded the subscription; the one running now has none.
    Worker other_topic(f.db, f.options);
    other_topic.subscribe("app", "t", [](const Event&, Context&) {});
  }
  Worker no_handler(f.db, f.options);
  no_handler.subscribe("app", "other", [](const Event&, Context&) {});
  f.publish("t");
  no_handler.run_until_idle();
  f.clock->advance(seconds(1));
  REQUIRE(waiting_for_handler(f.db, Duration(0), f.options).size() == 1);
  CHECK(waiting_for_handler(f.db, Duration::max(), f.options).empty());
}

TEST_CASE("a retention longer than the clock has run prunes nothing") {
  Fixture f;
  f.clock->set(TimePoint::min() + seconds(10));
  Worker worker(f.db, f.options);
  worker.subscribe("app", "t", [](const Event&, Context&) {});
  f.publish("t");
  worker.run_until_idle();
  CHECK(prune(f.db, Duration::max(), {.force = true}, f.options) == 0);
  CHECK(count(f.db, "sluice_events") == 1);
  f.clock->set(TimePoint::max());
  CHECK(prune(f.db, hours(1), {.force = true}, f.options) == 1);
}

TEST_CASE("Options durations out of range are refused naming the field, before any write") {
  struct Field {
    const char* name;
    Duration Options::*member;
    bool zero_allowed;
  };
  const Field fields[] = {{"busy_timeout", &Options::busy_timeout, true},
                          {"poll_interval", &Options::poll_interval, false},
                          {"batch_time_budget", &Options::batch_time_budget, true},
                          {"claim_lease", &Options::claim_lease, true}};
  TempDir dir;
  for (const Field& field : fields) {
    for (const Duration bad :
         {Duration(-1), Duration::min(), Duration::max(), Duration(hours(24 * 36501))}) {
      CAPTURE(field.name);
      CAPTURE(bad.count());
      Options options;
      options.*field.member = bad;
      CHECK_THROWS_WITH_AS(open_database(dir.file("app.db"), options),
                           doctest::Contains((std::string("Options.") + field.name).c_str()),
                           InvalidArgument);
      CHECK_FALSE(std::filesystem::exists(dir.file("app.db")));
      CHECK_THROWS_WITH_AS(Worker(dir.file("app.db"), options),
                           doctest::Contains((std::string("Options.") + field.name).c_str()),
                           InvalidArgument);
      Fixture f;
      CHECK_THROWS_WITH_AS(Worker(f.db, options),
                           doctest::Contains((std::string("Options.") + field.name).c_str()),
                           InvalidArgument);
    }
    Options zero;
    zero.*field.member = Duration(0);
    if (field.zero_allowed) {
      CHECK_NOTHROW(zero.validate());
    } else {
      CHECK_THROWS_WITH_AS(zero.validate(), doctest::Contains(field.name), InvalidArgument);
    }
    Options longest;
    longest.*field.member = hours(24 * 36500);
    CHECK_NOTHROW(longest.validate());
  }
}
