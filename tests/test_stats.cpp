#include <doctest/doctest.h>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::Fixture;
using std::chrono::seconds;

TEST_CASE("stats count pending, retrying, dead, delivered, retries and lag per consumer") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("c", "t", [](const Event& e, Context&) {
    if (e.payload == "\"retry\"") throw std::runtime_error("later");
    if (e.payload == "\"dead\"") throw PermanentError("never");
  });
  worker.subscribe("idle", "other", [](const Event&, Context&) {});
  f.publish("t");
  f.publish("t", "\"retry\"");
  f.publish("t", "\"dead\"");
  worker.run_until_idle();
  f.clock->advance(seconds(10));
  f.publish("t");
  f.clock->advance(seconds(5));
  const auto stats = consumer_stats(f.db, f.options);
  REQUIRE(stats.size() == 2);
  const ConsumerStats& c = stats[0];
  CHECK(c.consumer == "c");
  CHECK(c.topics == std::vector<std::string>{"t"});
  CHECK(c.pending == 2);
  CHECK(c.retrying == 1);
  CHECK(c.dead == 1);
  CHECK(c.claimed == 0);
  CHECK(c.delivered_total == 1);
  CHECK(c.retries_total == 1);
  CHECK(c.lag == seconds(15));
  CHECK(stats[1].pending == 0);
  CHECK(stats[1].lag == seconds(0));
}

TEST_CASE("metrics text is Prometheus exposition with HELP and TYPE per metric") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("bill\"ing", "t", [](const Event&, Context&) {});
  f.publish("t");
  f.publish("t");
  f.clock->advance(seconds(3));
  const std::string text = metrics_text(f.db, f.options);
  for (const char* name : {"sluice_backlog", "sluice_lag_seconds", "sluice_claimed",
                           "sluice_retrying", "sluice_dead_letters", "sluice_delivered_total",
                           "sluice_retries_total", "sluice_snoozed_total", "sluice_parked_keys"}) {
    CHECK(text.find(std::string("# HELP ") + name + " ") != std::string::npos);
    CHECK(text.find(std::string("# TYPE ") + name + " ") != std::string::npos);
  }
  CHECK(text.find("sluice_backlog{consumer=\"bill\\\"ing\"} 2\n") != std::string::npos);
  CHECK(text.find("sluice_lag_seconds{consumer=\"bill\\\"ing\"} 3\n") != std::string::npos);
  CHECK(text.find("# TYPE sluice_delivered_total counter") != std::string::npos);
  worker.run_until_idle();
  CHECK(
      metrics_text(f.db, f.options).find("sluice_delivered_total{consumer=\"bill\\\"ing\"} 2\n") !=
      std::string::npos);
}
