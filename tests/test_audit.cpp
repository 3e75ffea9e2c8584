// The audit log through the public API: record_audit appends with the connection's clock,
// commits with the caller's transaction when there is one, refuses what the log cannot hold,
// and list_audit pages by id. Every action that changes dead letters, consumers or retention
// records itself, in the same transaction as each of its changes.
#include <doctest/doctest.h>

#include <map>
#include <sluice/sluice.hpp>

#include "support/fixture.hpp"
#include "support/temp_dir.hpp"

using namespace sluice;

TEST_CASE("record_audit appends entries list_audit pages through by id") {
  test::TempDir dir;
  auto clock = std::make_shared<ManualClock>();
  Options options;
  options.clock = clock;
  SQLite::Database db = open_database(dir.file("app.db"), options);
  CHECK(list_audit(db).empty());
  const auto first = record_audit(
      db, {.action = "replay", .filter = R"({"consumer":"billing"})", .count = 3}, options);
  clock->advance(std::chrono::seconds(5));
  const auto second = record_audit(db,
                                   {.action = "discard",
                                    .filter = R"({"ids":["a"]})",
                                    .count = 1,
                                    .note = "test traffic",
                                    .source = "console"},
                                   options);
  CHECK(second > first);
  const auto all = list_audit(db);
  REQUIRE(all.size() == 2);
  CHECK(all[0].id == first);
  CHECK(all[0].at == clock->now() - std::chrono::seconds(5));
  CHECK(all[0].action == "replay");
  CHECK(all[0].filter == R"({"consumer":"billing"})");
  CHECK(all[0].count == 3);
  CHECK(all[0].note.empty());
  CHECK(all[0].source == "api");
  CHECK(all[1].at == clock->now());
  CHECK(all[1].note == "test traffic");
  CHECK(all[1].source == "console");
  const auto page = list_audit(db, first, 1);
  REQUIRE(page.size() == 1);
  CHECK(page[0].id == second);
  CHECK(list_audit(db, second).empty());
  CHECK_THROWS_AS(list_audit(db, 0, 0), InvalidArgument);
}

TEST_CASE("record_audit commits with the caller's transaction and refuses what it cannot hold") {
  test::TempDir dir;
  SQLite::Database db = open_database(dir.file("app.db"));
  {
    SQLite::Transaction tx(db);
    record_audit(db, {.action = "prune", .filter = "{}"});
    // Rolled back with the caller's work.
  }
  CHECK(list_audit(db).empty());
  CHECK_THROWS_WITH_AS(record_audit(db, {.action = "delete", .filter = "{}"}),
                       "sluice: record audit: unknown action 'delete' (replay, discard, "
                       "backfill, prune, remove, pause, resume)",
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(record_audit(db, {.action = "prune", .source = "cron"}),
                       "sluice: record audit: unknown source 'cron' (cli, console, sql, api)",
                       InvalidArgument);
  for (const char* filter : {"[]", "{", "", "\"x\""}) {
    CAPTURE(filter);
    CHECK_THROWS_WITH_AS(record_audit(db, {.action = "prune", .filter = filter}),
                         "sluice: record audit: the filter must be a JSON object", InvalidArgument);
  }
  CHECK(list_audit(db).empty());
}

namespace {

// `dead` events dead-lettered by consumer "billing", whose handler refuses every event for good.
void dead_letters(test::Fixture& f, int dead) {
  Worker worker(f.db, f.options);
  worker.subscribe("billing", "order.placed",
                   [](const Event&, Context&) { throw PermanentError("card declined"); });
  for (int i = 0; i < dead; ++i) f.publish("order.placed");
  worker.run_until_idle();
  REQUIRE(list_dead_letters(f.db, {}).size() == static_cast<std::size_t>(dead));
}

}  // namespace

TEST_CASE("replay, discard, backfill, prune and remove_consumer record themselves, source api") {
  test::Fixture f;
  dead_letters(f, 3);
  const auto events = list_events(f.db, {});
  CHECK(replay_dead_letters(f.db, {.event_ids = {events[0].id}}, f.options) == 1);
  CHECK(discard_dead_letters(f.db, {.consumer = "billing"}, "refunded by hand", f.options) == 2);
  const long long backfilled =
      backfill(f.db, "billing", {.from_event_id = events[0].id}, f.options);
  f.clock->advance(std::chrono::hours(2));
  const long long pruned = prune(f.db, std::chrono::hours(1), {.force = true}, f.options);
  const ConsumerRemoval removed = remove_consumer(f.db, "billing", {.force = true}, f.options);
  std::map<std::string, AuditEntry> by_action;
  for (const AuditEntry& entry : list_audit(f.db)) {
    CHECK(by_action.count(entry.action) == 0);
    CHECK(entry.source == "api");
    by_action[entry.action] = entry;
  }
  CHECK(by_action.at("replay").count == 1);
  CHECK(by_action.at("replay").filter == R"({"event_ids":[")" + events[0].id + R"("]})");
  CHECK(by_action.at("discard").count == 2);
  CHECK(by_action.at("discard").note == "refunded by hand");
  CHECK(by_action.at("discard").filter == R"({"consumer":"billing"})");
  // An action that changed nothing is on record too.
  CHECK(by_action.at("backfill").count == backfilled);
  CHECK(by_action.at("prune").count == pruned);
  CHECK(by_action.at("remove").count == removed.deliveries);
  CHECK(removed.deliveries > 0);
  CHECK(by_action.at("remove").filter == R"({"consumer":"billing","force":true})");
}

TEST_CASE("one AuditEntry passed to every call of an action records them as one entry") {
  test::Fixture f;
  dead_letters(f, 3);
  AuditEntry audit{.filter = R"({"all":true})", .source = "cli"};
  for (const Event& event : list_events(f.db, {})) {
    CHECK(replay_dead_letters(f.db, {.event_ids = {event.id}}, f.options, {}, audit) == 1);
  }
  const auto log = list_audit(f.db);
  REQUIRE(log.size() == 1);
  CHECK(log[0].id == audit.id);
  CHECK(log[0].count == 3);
  CHECK(audit.count == 3);
  CHECK(log[0].source == "cli");
  CHECK(log[0].filter == R"({"all":true})");
}

TEST_CASE("a replay cut short leaves its entry counting exactly the replays that committed") {
  test::Fixture f;
  dead_letters(f, 250);  // two transactions of replays: 200, then 50
  // The second transaction fails on its first replay, as a full disk or a kill would end it.
  f.db.exec(
      "CREATE TEMP TRIGGER cut_short AFTER UPDATE OF state ON sluice_deliveries WHEN (SELECT "
      "count(*) FROM sluice_deliveries WHERE state = 'pending') > 200 BEGIN SELECT "
      "RAISE(ABORT, 'disk gone'); END");
  AuditEntry audit{.source = "console"};
  CHECK_THROWS_AS(replay_dead_letters(f.db, {.consumer = "billing"}, f.options, {}, audit),
                  DatabaseError);
  CHECK(test::count(f.db, "sluice_deliveries", "state = 'pending'") == 200);
  const auto log = list_audit(f.db);
  REQUIRE(log.size() == 1);
  CHECK(log[0].count == 200);
  CHECK(audit.count == 200);
  // The rest, replayed later with the same entry, joins it.
  f.db.exec("DROP TRIGGER cut_short");
  CHECK(replay_dead_letters(f.db, {.consumer = "billing"}, f.options, {}, audit) == 50);
  CHECK(list_audit(f.db).at(0).count == 250);
}

TEST_CASE("an old file's audit log is kept by the migration that admits sql and remove") {
  test::TempDir dir;
  const std::string path = dir.file("app.db");
  {
    SQLite::Database db = open_database(path);
    record_audit(
        db, {.action = "prune", .filter = R"({"older_than":"7d"})", .count = 4, .source = "cli"});
    // Back to version 6, with the audit table of versions 5 and 6 and without the columns of
    // versions 8 to 10, as a file written before the migration has it.
    db.exec("ALTER TABLE sluice_events DROP COLUMN version");
    for (const char* column :
         {"paused_at", "paused_until", "pause_note", "paused_by", "throttled_total",
          "breaker_failures", "breaker_cool_down_ms", "breaker_max_cool_down_ms",
          "breaker_consecutive", "breaker_open_until", "breaker_open_ms", "breaker_probe"}) {
      db.exec(std::string("ALTER TABLE sluice_consumers DROP COLUMN ") + column);
    }
    db.exec(
        "DROP INDEX sluice_events_key; "
        "DROP TABLE sluice_audit; CREATE TABLE sluice_audit (id INTEGER PRIMARY KEY, at INTEGER "
        "NOT NULL, action TEXT NOT NULL CHECK (action = 'replay' OR action = 'discard' OR action "
        "= 'backfill' OR action = 'prune'), filter TEXT NOT NULL, count INTEGER NOT NULL, note "
        "TEXT, source TEXT NOT NULL CHECK (source = 'console' OR source = 'cli' OR source = "
        "'api')); INSERT INTO sluice_audit VALUES (7, 1000, 'prune', '{}', 4, 'kept', 'cli'); "
        "ALTER TABLE sluice_consumers DROP COLUMN initial_backoff_ms; "
        "ALTER TABLE sluice_consumers DROP COLUMN max_backoff_ms; "
        "ALTER TABLE sluice_consumers DROP COLUMN backoff_multiplier; "
        "ALTER TABLE sluice_consumers DROP COLUMN backoff_jitter; "
        "ALTER TABLE sluice_consumers DROP COLUMN backoff_seed; "
        "UPDATE sluice_meta SET value = 6 WHERE name = 'schema_version'");
  }
  SQLite::Database db = open_database(path);
  const auto log = list_audit(db);
  REQUIRE(log.size() == 1);
  CHECK(log[0].id == 7);
  CHECK(log[0].note == "kept");
  record_audit(db, {.action = "remove", .filter = "{}", .source = "sql"});
  CHECK(list_audit(db).size() == 2);
}
