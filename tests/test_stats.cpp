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

TEST_CASE("events waiting for a handler are counted per consumer, and by topic once old") {
  Fixture f;
  {
    // A build with handlers for every topic of "c" ran once and recorded its subscriptions.
    Worker newer(f.db, f.options);
    for (const char* topic : {"t", "rare", "other"}) {
      newer.subscribe("c", topic, [](const Event&, Context&) {});
    }
  }
  // The build running now handles only "t": it leaves the others for a worker that has them.
  Worker older(f.db, f.options);
  older.subscribe("c", "t", [](const Event&, Context&) {});
  older.subscribe("d", "t", [](const Event&, Context&) {});
  f.publish("rare");
  f.publish("other");
  f.publish("t");
  f.clock->advance(std::chrono::hours(1));
  f.publish("rare");
  older.run_until_idle();

  const auto stats = consumer_stats(f.db, f.options);
  REQUIRE(stats.size() == 2);
  CHECK(stats[0].waiting_for_handler == 3);
  CHECK(stats[0].pending == 3);
  CHECK(stats[0].retrying == 0);
  CHECK(stats[1].waiting_for_handler == 0);
  CHECK(metrics_text(f.db, f.options).find("sluice_waiting_for_handler{consumer=\"c\"} 3") !=
        std::string::npos);

  const auto waits = waiting_for_handler(f.db, std::chrono::minutes(15), f.options);
  REQUIRE(waits.size() == 2);
  CHECK(waits[0].consumer == "c");
  CHECK(waits[0].topic == "other");
  CHECK(waits[0].events == 1);
  CHECK(waits[1].topic == "rare");
  CHECK(waits[1].events == 1);
  CHECK(waits[1].oldest == f.clock->now() - std::chrono::hours(1));
  CHECK(waiting_for_handler(f.db, std::chrono::hours(2), f.options).empty());
}

TEST_CASE("metrics text gives counters as exact integers and lag exact to the millisecond") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("c", "t", [](const Event&, Context&) {});
  f.publish("t");
  f.db.exec("UPDATE sluice_consumers SET delivered_total = 1234566, retries_total = 9007199254740");
  // Two days and 3.284 s: six significant digits wrote 172803 and 1.23457e+06.
  f.clock->advance(std::chrono::milliseconds(172'803'284));
  const std::string text = metrics_text(f.db, f.options);
  CHECK(text.find("sluice_delivered_total{consumer=\"c\"} 1234566\n") != std::string::npos);
  CHECK(text.find("sluice_retries_total{consumer=\"c\"} 9007199254740\n") != std::string::npos);
  CHECK(text.find("sluice_lag_seconds{consumer=\"c\"} 172803.284\n") != std::string::npos);
}

TEST_CASE("metrics text escapes a consumer name's backslash, quote and line break") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("a\\b\"c d", "t", [](const Event&, Context&) {});
  // subscribe refuses a line break in a name; a file written by anything else may hold one.
  f.db.exec("UPDATE sluice_consumers SET name = replace(name, ' ', char(10))");
  CHECK(metrics_text(f.db, f.options).find("sluice_backlog{consumer=\"a\\\\b\\\"c\\nd\"} 0\n") !=
        std::string::npos);
}

TEST_CASE("the NATS ingest positions in the file are listed and exposed as metrics") {
  Fixture f;
  CHECK(ingest_positions(f.db).empty());
  f.db.exec(
      "INSERT INTO sluice_nats_positions (stream, durable, stream_seq) VALUES "
      "('ORDERS', 'billing', 1234567890123), ('ORDERS', 'audit', 7)");
  const std::vector<IngestPosition> positions = ingest_positions(f.db);
  REQUIRE(positions.size() == 2);
  CHECK(positions[0].stream == "ORDERS");
  CHECK(positions[0].durable == "audit");
  CHECK(positions[0].stream_seq == 7);
  CHECK(positions[1].durable == "billing");
  const std::string text = metrics_text(f.db, f.options);
  CHECK(text.find("# HELP sluice_ingest_position ") != std::string::npos);
  CHECK(text.find("# TYPE sluice_ingest_position gauge") != std::string::npos);
  CHECK(
      text.find("sluice_ingest_position{stream=\"ORDERS\",durable=\"billing\"} 1234567890123\n") !=
      std::string::npos);
}
