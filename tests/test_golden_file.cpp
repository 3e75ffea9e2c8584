// The golden file (tests/golden/v4.sluice, what golden/write_golden.cpp wrote with the build of
// schema version 4) opened by this build: a copy is migrated if the schema moved on, its stats
// read as they were left, its pending events delivered, its dead letter replayed, and new events
// reach its consumers. The file format is a contract across versions and languages.
#include <SQLiteCpp/Statement.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sluice/sluice.hpp>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// A copy of the golden file in a directory of its own, removed after.
class GoldenCopy {
 public:
  GoldenCopy() {
    const char* golden = std::getenv("SLUICE_GOLDEN_FILE");
    REQUIRE_MESSAGE(golden != nullptr, "SLUICE_GOLDEN_FILE names the golden file");
    dir_ = fs::temp_directory_path() / ("sluice-golden-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "golden.sluice").string();
    fs::copy_file(golden, path_);
  }
  ~GoldenCopy() { fs::remove_all(dir_); }
  const std::string& path() const { return path_; }

 private:
  fs::path dir_;
  std::string path_;
};

std::map<std::string, sluice::ConsumerStats> stats_by_consumer(SQLite::Database& db) {
  std::map<std::string, sluice::ConsumerStats> by_name;
  for (auto& one : sluice::consumer_stats(db)) by_name[one.consumer] = one;
  return by_name;
}

long long count(SQLite::Database& db, const std::string& sql) {
  SQLite::Statement query(db, sql);
  query.executeStep();
  return query.getColumn(0).getInt64();
}

// What the worker's handlers were given.
struct Delivery {
  std::string consumer;
  sluice::Event event;
  int attempt = 0;
};

// The consumers of the golden file, with the options write_golden.cpp gave them, each handler
// writing a ledger row in its delivery transaction (in-transaction consumers) and recording
// what it was given.
void subscribe_all(sluice::Worker& worker, std::vector<Delivery>& deliveries) {
  auto recording = [&deliveries](const sluice::Event& event, sluice::Context& ctx) {
    deliveries.push_back({ctx.consumer(), event, ctx.attempt()});
    SQLite::Statement insert(ctx.db(), "INSERT INTO ledger (event_id, consumer) VALUES (?, ?)");
    insert.bind(1, event.id);
    insert.bind(2, ctx.consumer());
    insert.exec();
  };
  const sluice::RetryPolicy billing_retry{
      .max_attempts = 3, .initial_backoff = std::chrono::seconds(60), .jitter = 0.0};
  worker.subscribe("billing", "order.placed", recording, {.ordered = true, .retry = billing_retry});
  const sluice::ConsumerOptions shipping{.start_from = sluice::StartFrom::kOldest};
  worker.subscribe("shipping", "order.placed", recording, shipping);
  worker.subscribe("shipping", "order.cancelled", recording, shipping);
  worker.subscribe("audit", "order.placed",
                   [&deliveries](const sluice::Event& event, sluice::Context& ctx) {
                     deliveries.push_back({ctx.consumer(), event, ctx.attempt()});
                   },
                   {.mode = sluice::DeliveryMode::kOutsideTransaction});
  worker.subscribe("mailer", "order.shipped", recording);
}

}  // namespace

TEST_CASE("the golden file of schema version 4 opens, migrates and delivers") {
  GoldenCopy copy;
  {
    SQLite::Database before = sluice::open_database(copy.path(), {}, sluice::OpenMode::kReadOnly);
    CHECK(sluice::stored_schema_version(before) == 4);
  }
  SQLite::Database db = sluice::open_database(copy.path(), {}, sluice::OpenMode::kExisting);
  CHECK(sluice::stored_schema_version(db) == sluice::schema_version());

  // As write_golden.cpp left it.
  auto stats = stats_by_consumer(db);
  REQUIRE(stats.size() == 4);
  CHECK(stats["billing"].delivered_total == 3);
  CHECK(stats["billing"].pending == 1);
  CHECK(stats["billing"].retrying == 1);
  CHECK(stats["billing"].dead == 1);
  CHECK(stats["billing"].parked_keys == 1);
  CHECK(stats["billing"].retries_total == 3);
  CHECK(stats["shipping"].delivered_total == 7);
  CHECK(stats["shipping"].pending == 0);
  CHECK(stats["audit"].delivered_total == 6);
  CHECK(stats["mailer"].pending == 2);
  CHECK(stats["mailer"].delivered_total == 0);
  // Version 8: no consumer of an older file is paused, none was throttled, and its audit log
  // (none in version 4) takes the new actions.
  for (const auto& [name, one] : stats) {
    CAPTURE(name);
    CHECK_FALSE(one.paused);
    CHECK(one.paused_by.empty());
    CHECK(one.throttled_total == 0);
  }
  sluice::pause_consumer(db, "shipping");
  CHECK(sluice::list_audit(db).back().action == "pause");
  CHECK(sluice::resume_consumer(db, "shipping"));
  CHECK(count(db, "SELECT count(*) FROM orders WHERE status = 'charged'") == 3);
  CHECK(count(db, "SELECT count(*) FROM ledger") == 3 + 7);
  CHECK(count(db, "SELECT count(*) FROM sluice_inbox") >= 3 + 7);
  CHECK(count(db, "SELECT count(*) FROM sluice_attempts") > 0);

  const auto dead = sluice::list_dead_letters(db, {});
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].event_id == "order-4-placed");
  CHECK(dead[0].consumer == "billing");
  CHECK(dead[0].key == "4");
  CHECK(dead[0].reason == "permanent");
  CHECK(dead[0].last_error == "card declined");
  const auto all_dead = sluice::list_dead_letters(db, {.include_discarded = true});
  REQUIRE(all_dead.size() == 2);
  CHECK(all_dead[1].event_id == "order-5-placed");
  CHECK(all_dead[1].discarded);
  CHECK(all_dead[1].note == "refunded by hand");

  // The pending events: order 3's last retry (its retry is long due) and the mailer's two.
  // Version 4 recorded no backoff: the workers' subscriptions below record theirs.
  CHECK(count(db, "SELECT count(*) FROM sluice_consumers WHERE initial_backoff_ms IS NULL") == 4);
  std::vector<Delivery> deliveries;
  sluice::Worker worker(copy.path());
  subscribe_all(worker, deliveries);
  CHECK(count(db,
              "SELECT count(*) FROM sluice_consumers WHERE name = 'billing' AND "
              "initial_backoff_ms = 60000 AND backoff_jitter = 0") == 1);
  sluice::DrainResult drained = worker.run_until_idle();
  CHECK(drained.delivered == 3);
  CHECK(drained.retried == 0);
  REQUIRE(deliveries.size() == 3);
  std::map<std::string, Delivery> by_id;
  for (const auto& delivery : deliveries) by_id[delivery.event.id] = delivery;
  REQUIRE(by_id.count("order-3-placed") == 1);
  const Delivery& order_3 = by_id["order-3-placed"];
  CHECK(order_3.consumer == "billing");
  CHECK(order_3.attempt == 3);
  CHECK(order_3.event.topic == "order.placed");
  CHECK(order_3.event.payload == R"({"order_id":"3"})");
  CHECK(order_3.event.key == "3");
  CHECK(order_3.event.dedup_key == "order-3:placed");
  CHECK(order_3.event.headers == sluice::Headers{{"trace", "t-3"}});
  CHECK(by_id["order-1-shipped"].consumer == "mailer");
  CHECK(by_id["order-2-shipped"].consumer == "mailer");

  // The dead letter replayed: delivered on a fresh first attempt, its key unparked.
  deliveries.clear();
  CHECK(sluice::replay_dead_letters(db, {.event_ids = {"order-4-placed"}}) == 1);
  drained = worker.run_until_idle();
  CHECK(drained.delivered == 1);
  REQUIRE(deliveries.size() == 1);
  CHECK(deliveries[0].event.id == "order-4-placed");
  CHECK(deliveries[0].attempt == 1);

  stats = stats_by_consumer(db);
  CHECK(stats["billing"].delivered_total == 5);
  CHECK(stats["billing"].pending == 0);
  CHECK(stats["billing"].dead == 0);
  CHECK(stats["billing"].parked_keys == 0);
  CHECK(stats["mailer"].delivered_total == 2);
  CHECK(count(db, "SELECT count(*) FROM ledger WHERE consumer = 'billing'") == 5);

  // An event of this build reaches the old file's consumers, and its old dedup keys still hold.
  sluice::Outbox outbox(db);
  const auto again = outbox.enqueue_now({.topic = "order.placed", .dedup_key = "order-6:placed"});
  CHECK(again.status == sluice::EnqueueResult::Status::kDuplicateDedupKey);
  CHECK(again.id == "order-6-placed");
  outbox.enqueue_now(
      {.topic = "order.placed", .payload = R"({"order_id":"7"})", .key = "7", .id = "order-7"});
  deliveries.clear();
  drained = worker.run_until_idle();
  CHECK(drained.delivered == 3);
  std::vector<std::string> consumers;
  for (const auto& delivery : deliveries) consumers.push_back(delivery.consumer);
  std::sort(consumers.begin(), consumers.end());
  CHECK(consumers == std::vector<std::string>{"audit", "billing", "shipping"});
}

TEST_CASE("the golden file's events and histories read as they were written") {
  GoldenCopy copy;
  SQLite::Database db = sluice::open_database(copy.path(), {}, sluice::OpenMode::kExisting);
  const sluice::Event order_6 = sluice::find_event(db, "order-6-placed");
  CHECK(order_6.headers == sluice::Headers{{"note", "café"}, {"trace", "t-6"}});
  CHECK(order_6.created_at == sluice::TimePoint(sluice::Duration(1704067200000 + 5000)));
  const sluice::Event cancelled = sluice::find_event(db, "order-6-cancelled");
  REQUIRE(cancelled.not_before.has_value());
  CHECK(*cancelled.not_before == sluice::TimePoint(sluice::Duration(1704067200000 + 60000)));

  // Order 2 was delivered on its second attempt: the first attempt's failure is history.
  bool retried = false, delivered = false;
  for (const auto& record : sluice::attempt_history(db, sluice::find_event(db, "order-2-placed"))) {
    if (record.consumer != "billing") continue;
    if (record.outcome == "retry" && record.error == "gateway busy") retried = true;
    if (record.outcome == "delivered" && record.attempt == 2) delivered = true;
  }
  CHECK(retried);
  CHECK(delivered);

  // The discard is recorded as an operator's action on order 5.
  bool discarded = false;
  for (const auto& record : sluice::attempt_history(db, sluice::find_event(db, "order-5-placed"))) {
    if (record.outcome == "discarded") discarded = true;
  }
  CHECK(discarded);
  for (const auto& status :
       sluice::delivery_statuses(db, sluice::find_event(db, "order-3-placed"))) {
    if (status.consumer == "billing") {
      CHECK(status.state == "retrying");
      CHECK(status.attempts == 2);
      CHECK(status.last_error == "payment gateway timeout");
    }
  }
}
