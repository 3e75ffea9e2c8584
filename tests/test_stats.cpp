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

namespace {

// What a worker without a handler for the event's topic leaves behind (issue 20): the consumer's
// cursor past the event, and a pending row with reason 'unhandled' and no attempt spent.
void leave_for_handler(SQLite::Database& db, const std::string& consumer, std::int64_t seq,
                       TimePoint now) {
  SQLite::Statement row(db,
                        "INSERT INTO sluice_deliveries (consumer_id, event_seq, state, attempts, "
                        "next_attempt_at, reason) SELECT id, ?2, 'pending', 0, ?3, 'unhandled' "
                        "FROM sluice_consumers WHERE name = ?1");
  row.bind(1, consumer);
  row.bind(2, static_cast<int64_t>(seq));
  row.bind(3, static_cast<int64_t>(now.time_since_epoch().count()));
  REQUIRE(row.exec() == 1);
  SQLite::Statement cursor(db,
                           "UPDATE sluice_consumers SET cursor = max(cursor, ?2) WHERE name = ?1");
  cursor.bind(1, consumer);
  cursor.bind(2, static_cast<int64_t>(seq));
  cursor.exec();
}

}  // namespace

TEST_CASE("events waiting for a handler are counted per consumer, and by topic once old") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("c", "t", [](const Event&, Context&) {});
  worker.subscribe("c", "rare", [](const Event&, Context&) {});
  worker.subscribe("d", "t", [](const Event&, Context&) {});
  const auto old_one = f.publish("rare");
  const auto old_two = f.publish("t");
  f.clock->advance(std::chrono::hours(1));
  const auto fresh = f.publish("rare");
  leave_for_handler(f.db, "c", old_one.seq, f.clock->now());
  leave_for_handler(f.db, "c", old_two.seq, f.clock->now());
  leave_for_handler(f.db, "c", fresh.seq, f.clock->now());

  const auto stats = consumer_stats(f.db, f.options);
  REQUIRE(stats.size() == 2);
  CHECK(stats[0].waiting_for_handler == 3);
  CHECK(stats[0].pending == 3);
  CHECK(stats[1].waiting_for_handler == 0);
  CHECK(metrics_text(f.db, f.options).find("sluice_waiting_for_handler{consumer=\"c\"} 3") !=
        std::string::npos);

  const auto waits = waiting_for_handler(f.db, std::chrono::minutes(15), f.options);
  REQUIRE(waits.size() == 2);
  CHECK(waits[0].consumer == "c");
  CHECK(waits[0].topic == "rare");
  CHECK(waits[0].events == 1);
  CHECK(waits[0].oldest == f.clock->now() - std::chrono::hours(1));
  CHECK(waits[1].topic == "t");
  CHECK(waits[1].events == 1);
  CHECK(waiting_for_handler(f.db, std::chrono::hours(2), f.options).empty());
}
