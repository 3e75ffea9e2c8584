#include <doctest/doctest.h>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::Fixture;
using sluice::test::recording;

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
