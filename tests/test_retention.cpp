#include <doctest/doctest.h>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::Fixture;
using std::chrono::hours;

TEST_CASE("prune deletes finished history and keeps pending, retrying and dead work") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("c", "t", [](const Event& e, Context&) {
    if (e.payload == "\"retry\"") throw std::runtime_error("later");
    if (e.payload == "\"dead\"") throw PermanentError("never");
  });
  for (int i = 0; i < 10; ++i) f.publish("t");
  f.publish("t", "\"retry\"");
  f.publish("t", "\"dead\"");
  worker.run_until_idle();
  f.clock->advance(hours(48));
  f.publish("t");  // not delivered yet, and new
  const long long before = count(f.db, "sluice_events");
  CHECK(prune(f.db, hours(24), {.dry_run = true}, f.options) == 10);
  CHECK(count(f.db, "sluice_events") == before);
  long long last_progress = 0;
  CHECK(prune(f.db, hours(24),
              {.batch_size = 3, .progress = [&](long long n) { last_progress = n; }},
              f.options) == 10);
  CHECK(last_progress == 10);
  CHECK(count(f.db, "sluice_events") == 3);
  CHECK(count(f.db, "sluice_inbox") == 0);
  CHECK(count(f.db, "sluice_deliveries") == 2);
  const auto next = f.publish("t");
  CHECK(next.seq == before + 1);
}

TEST_CASE("prune refuses a retention under the dedup horizon unless forced") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("c", "t", [](const Event&, Context&) {});
  const Duration horizon = dedup_horizon(f.db, f.options);
  CHECK(horizon == f.options.retry.longest_span());
  CHECK_THROWS_WITH_AS(prune(f.db, std::chrono::milliseconds(1), {}, f.options),
                       doctest::Contains("dedup horizon"), InvalidArgument);
  CHECK(prune(f.db, std::chrono::milliseconds(1), {.force = true}, f.options) == 0);
}

TEST_CASE("prune never deletes events inside a claim or past a consumer's cursor") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("c", "t", [](const Event&, Context&) {});
  f.publish("t");
  f.publish("t");
  f.clock->advance(hours(48));
  CHECK(prune(f.db, hours(24), {}, f.options) == 0);
  worker.run_until_idle();
  CHECK(prune(f.db, hours(24), {}, f.options) == 2);
}
