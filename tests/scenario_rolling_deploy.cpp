// A rolling deploy: an old build and a new build of an app run on one file for a while, the new
// one handling a topic the old one has no handler for. No event is dead-lettered, or spends an
// attempt, for want of a handler in the other process.
#include <doctest/doctest.h>

#include <algorithm>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::Fixture;

TEST_CASE("an instance without a handler for a topic leaves its events to one that has it") {
  for (const DeliveryMode mode :
       {DeliveryMode::kInTransaction, DeliveryMode::kOutsideTransaction}) {
    for (const bool ordered : {false, true}) {
      CAPTURE(static_cast<int>(mode));
      CAPTURE(ordered);
      Fixture f(true);
      f.options.retry.max_attempts = 1;
      SQLite::Database old_db = open_database(f.dir.file("app.db"), f.options);
      SQLite::Database new_db = open_database(f.dir.file("app.db"), f.options);
      Worker old_build(old_db, f.options);
      Worker new_build(new_db, f.options);
      std::vector<std::string> old_applied;
      std::vector<std::string> new_applied;
      const ConsumerOptions options{.mode = mode, .ordered = ordered};
      old_build.subscribe(
          "c", "a", [&](const Event& e, Context&) { old_applied.push_back(e.payload); }, options);
      for (const char* topic : {"a", "b"}) {
        new_build.subscribe(
            "c", topic, [&](const Event& e, Context&) { new_applied.push_back(e.payload); },
            options);
      }
      f.publish("t0", "{}");
      f.publish("b", "\"b1\"", "k");
      f.publish("a", "\"a1\"", "k");
      f.publish("b", "\"b2\"", "j");
      f.publish("a", "\"a2\"", "j");
      old_build.run_until_idle();
      CHECK(count(f.db, "sluice_deliveries", "state = 'dead'") == 0);
      new_build.run_until_idle();
      old_build.run_until_idle();
      CHECK(count(f.db, "sluice_deliveries", "state = 'dead'") == 0);
      CHECK(count(f.db, "sluice_deliveries") == 0);
      std::vector<std::string> all = old_applied;
      all.insert(all.end(), new_applied.begin(), new_applied.end());
      std::sort(all.begin(), all.end());
      CHECK(all == std::vector<std::string>{"\"a1\"", "\"a2\"", "\"b1\"", "\"b2\""});
      CHECK(consumer_stats(f.db, f.options).at(0).retries_total == 0);
    }
  }
}
