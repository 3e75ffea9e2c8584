// The audit log through the public API: record_audit appends with the connection's clock,
// commits with the caller's transaction when there is one, refuses what the log cannot hold,
// and list_audit pages by id.
#include <doctest/doctest.h>

#include <sluice/sluice.hpp>

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
                       "backfill, prune)",
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(record_audit(db, {.action = "prune", .source = "cron"}),
                       "sluice: record audit: unknown source 'cron' (cli, console, api)",
                       InvalidArgument);
  for (const char* filter : {"[]", "{", "", "\"x\""}) {
    CAPTURE(filter);
    CHECK_THROWS_WITH_AS(record_audit(db, {.action = "prune", .filter = filter}),
                         "sluice: record audit: the filter must be a JSON object", InvalidArgument);
  }
  CHECK(list_audit(db).empty());
}
