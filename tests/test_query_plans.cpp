// Every statement sluice runs on the hot path (enqueue, claim, deliver, retry, dead-letter,
// snooze) finds its rows through an index: EXPLAIN QUERY PLAN shows no full SCAN of a sluice_
// table, so delivery does not slow down as the file grows. The statements are the ones sluice
// really runs, recorded with sqlite3_trace_v2 while the hot path is exercised.
#include <SQLiteCpp/Statement.h>
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "sluice/sluice.hpp"
#include "support/statement_recorder.hpp"

namespace {

using sluice::test::StatementRecorder;

// The plan lines of `sql` that read a whole table or index. The plan names a table by its alias
// when it has one ("SCAN d"), and sluice's statements read only sluice_ tables, so every SCAN
// but that of a constant row counts.
std::vector<std::string> full_scans(SQLite::Database& db, const std::string& sql) {
  std::vector<std::string> scans;
  SQLite::Statement plan(db, "EXPLAIN QUERY PLAN " + sql);
  while (plan.executeStep()) {
    std::string detail = plan.getColumn(3).getString();
    // A table-valued function (json_each over the few topics a process handles) is no table.
    if (detail.rfind("SCAN ", 0) == 0 && detail != "SCAN CONSTANT ROW" &&
        detail.find("VIRTUAL TABLE") == std::string::npos) {
      scans.push_back(detail);
    }
  }
  return scans;
}

sluice::NewEvent event(const std::string& topic, const std::string& key = "") {
  sluice::NewEvent e;
  e.topic = topic;
  e.payload = R"({"n":1})";
  e.key = key;
  return e;
}

void enqueue_in_transaction(SQLite::Database& db, sluice::Outbox& outbox,
                            const std::vector<sluice::NewEvent>& events) {
  db.exec("BEGIN IMMEDIATE");
  for (const auto& e : events) outbox.enqueue(e);
  db.exec("COMMIT");
}

// Runs every hot-path operation once on `db` and returns the statements sluice ran for them.
std::set<std::string> hot_path_statements(SQLite::Database& db) {
  auto clock = std::make_shared<sluice::ManualClock>();
  sluice::Options options;
  options.clock = clock;
  sluice::Outbox outbox(db, options);
  sluice::Worker worker(db, options);
  int failures_left = 1;
  worker.subscribe("in-tx", "orders", [](const sluice::Event&, sluice::Context&) {});
  worker.subscribe("flaky", "orders", [&](const sluice::Event&, sluice::Context&) {
    if (failures_left-- > 0) throw std::runtime_error("transient");
  });
  worker.subscribe("doomed", "doomed", [](const sluice::Event&, sluice::Context&) {
    throw sluice::PermanentError("never");
  });
  sluice::ConsumerOptions ordered;
  ordered.ordered = true;
  worker.subscribe(
      "ordered", "orders", [](const sluice::Event&, sluice::Context&) {}, ordered);
  sluice::ConsumerOptions outside;
  outside.mode = sluice::DeliveryMode::kOutsideTransaction;
  int snoozes_left = 1;
  worker.subscribe_batch(
      "batch", "orders",
      [&](const std::vector<sluice::Event>& events) {
        std::vector<sluice::Outcome> outcomes;
        for (std::size_t i = 0; i < events.size(); ++i) {
          outcomes.push_back(snoozes_left-- > 0 ? sluice::Outcome::snooze(std::chrono::seconds(1))
                                                : sluice::Outcome::done());
        }
        return outcomes;
      },
      outside);
  // Enough history that a scan and an index search differ.
  for (int i = 0; i < 20; ++i) {
    enqueue_in_transaction(db, outbox, {event("orders", "k1"), event("orders", "k2")});
  }
  worker.run_until_idle();

  StatementRecorder recorder(db);
  failures_left = 1;
  snoozes_left = 1;
  enqueue_in_transaction(db, outbox, {event("orders", "k1"), event("orders"), event("doomed")});
  sluice::NewEvent deduplicated = event("orders");
  deduplicated.dedup_key = "order-1:paid";
  enqueue_in_transaction(db, outbox, {deduplicated, deduplicated});
  outbox.enqueue_now(event("orders"));
  worker.run_until_idle();
  clock->advance(std::chrono::hours(1));
  worker.run_until_idle();
  return recorder.statements();
}

}  // namespace

TEST_CASE("a full scan shows in the plan, under its table's name or its alias") {
  SQLite::Database db = sluice::open_database(":memory:");
  CHECK(full_scans(db, "SELECT count(*) FROM sluice_inbox WHERE delivered_at > 0").size() == 1);
  CHECK(full_scans(db, "SELECT 1 FROM sluice_deliveries d WHERE d.reason = 'x'").size() == 1);
  CHECK(full_scans(db, "SELECT seq FROM sluice_events WHERE seq > 5").empty());
}

TEST_CASE("hot-path statements use an index on every sluice table they read") {
  SQLite::Database db = sluice::open_database(":memory:");
  std::set<std::string> statements = hot_path_statements(db);
  // Enqueue, claim, deliver, retry, dead-letter and snooze all ran.
  CHECK(statements.size() > 20);
  for (const std::string& sql : statements) {
    std::vector<std::string> scans = full_scans(db, sql);
    std::string first_scan = scans.empty() ? "" : scans.front();
    CAPTURE(sql);
    CAPTURE(first_scan);
    CHECK(scans.empty());
  }
}

// The statement on `db` whose SQL contains `text`; null if none is prepared.
sqlite3_stmt* prepared_statement(SQLite::Database& db, const std::string& text) {
  for (sqlite3_stmt* s = sqlite3_next_stmt(db.getHandle(), nullptr); s != nullptr;
       s = sqlite3_next_stmt(db.getHandle(), s)) {
    if (std::string(sqlite3_sql(s)).find(text) != std::string::npos) return s;
  }
  return nullptr;
}

TEST_CASE("the search for crash suspects before each claim does not walk the due retries") {
  SQLite::Database db = sluice::open_database(":memory:");
  auto clock = std::make_shared<sluice::ManualClock>();
  sluice::Options options;
  options.clock = clock;
  options.retry.max_attempts = 2;
  sluice::Outbox outbox(db, options);
  sluice::Worker worker(db, options);
  worker.subscribe("flaky", "orders",
                   [](const sluice::Event&, sluice::Context& ctx) { ctx.retry("still down"); });
  std::vector<sluice::NewEvent> events(2000, event("orders"));
  enqueue_in_transaction(db, outbox, events);
  CHECK(worker.run_until_idle().retried == 2000);
  clock->advance(std::chrono::hours(1));  // all 2000 retries due, none of them a suspect
  sqlite3_stmt* suspects = prepared_statement(db, "d.suspect > 0");
  REQUIRE(suspects != nullptr);
  sqlite3_stmt_status(suspects, SQLITE_STMTSTATUS_VM_STEP, 1);
  CHECK(worker.run_until_idle().dead_lettered == 2000);
  // A handful of steps per claim; walking the due rows took tens per row.
  CHECK(sqlite3_stmt_status(suspects, SQLITE_STMTSTATUS_VM_STEP, 0) < 500);
}
