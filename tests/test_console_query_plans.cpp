// The console's queries stay fast on a large file: each page's statements (found by recording
// what the library runs for the console's calls) search sluice_events, sluice_inbox,
// sluice_attempts and sluice_audit through an index, never by a full SCAN; the events search
// pages in seq order from the page's start (keyset, never OFFSET) with no sort, by the dedup
// key's, the ordering key's or the ID's index when given, and a time range by seq through a
// window of events, then by the creation time index. sluice_deliveries, sluice_consumers and
// sluice_subscriptions may be scanned: they hold only unfinished work and a row per consumer.
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <set>
#include <sluice/sluice.hpp>
#include <string>
#include <utility>
#include <vector>

#include "support/statement_recorder.hpp"

namespace {

using sluice::test::StatementRecorder;

std::vector<std::string> plan(SQLite::Database& db, const std::string& sql) {
  std::vector<std::string> lines;
  SQLite::Statement explain(db, "EXPLAIN QUERY PLAN " + sql);
  while (explain.executeStep()) lines.push_back(explain.getColumn(3).getString());
  return lines;
}

// Plan lines that read all of a large table: the statements name sluice_events e,
// sluice_inbox i and sluice_attempts a.
std::vector<std::string> large_scans(const std::vector<std::string>& lines) {
  std::vector<std::string> scans;
  for (const std::string& line : lines) {
    for (const char* table :
         {"sluice_events", "e", "sluice_inbox", "i", "sluice_attempts", "a", "sluice_audit"}) {
      const std::string scan = std::string("SCAN ") + table;
      if (line == scan || line.rfind(scan + " ", 0) == 0) scans.push_back(line);
    }
  }
  return scans;
}

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& line : lines) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

// The plan of the one statement run by list_events(filter) that selects the events.
std::vector<std::string> search_plan(SQLite::Database& db, StatementRecorder& recorder,
                                     const sluice::EventFilter& filter) {
  sluice::list_events(db, filter);
  for (const std::string& sql : recorder.take()) {
    if (sql.find("FROM sluice_events e") != std::string::npos) return plan(db, sql);
  }
  FAIL("list_events ran no search of sluice_events");
  return {};
}

}  // namespace

TEST_CASE("the console's event searches page in seq order from the index of what they search") {
  SQLite::Database db = sluice::open_database(":memory:");
  sluice::Outbox outbox(db);
  for (int i = 0; i < 50; ++i) {
    outbox.enqueue_now({.topic = i % 2 ? "a" : "b",
                        .key = "k" + std::to_string(i % 5),
                        .dedup_key = "d" + std::to_string(i)});
  }
  StatementRecorder recorder(db);
  const auto now = sluice::system_clock()->now();
  struct Search {
    const char* what;
    sluice::EventFilter filter;
    const char* index;
  };
  const std::vector<Search> searches = {
      {"topic", {.topic = "a", .after_seq = 10}, "INTEGER PRIMARY KEY (rowid>?)"},
      {"key", {.key = "k1", .after_seq = 10}, "INDEX sluice_events_key (key=? AND rowid>?)"},
      {"dedup key", {.topic = "a", .dedup_key = "d3"}, "sluice_events_dedup"},
      {"event ID", {.event_id = "x"}, "sqlite_autoindex_sluice_events"},
      {"topic and time",
       {.topic = "a", .since = now, .until = now, .after_seq = 10},
       "COVERING INDEX sluice_events_created"},
  };
  for (const Search& search : searches) {
    CAPTURE(search.what);
    const auto lines = search_plan(db, recorder, search.filter);
    CAPTURE(lines.front());
    CHECK(mentions(lines, search.index));
    CHECK(!mentions(lines, "TEMP B-TREE"));
    CHECK(large_scans(lines).empty());
  }
  // A time range alone: by seq through a window of the events from the page's start; past the
  // window (20,000 events), from the creation time index alone (covering: no table reads).
  {
    SQLite::Transaction tx(db);
    for (int i = 0; i < 25'000; ++i) outbox.enqueue({.topic = "c"});
    tx.commit();
  }
  const auto later = now + std::chrono::hours(1);
  for (const sluice::EventFilter& filter :
       {sluice::EventFilter{.since = later, .until = later + std::chrono::hours(1)},
        sluice::EventFilter{.since = later, .after_seq = 10},
        sluice::EventFilter{.until = now - std::chrono::hours(1)},
        sluice::EventFilter{.since = later, .newest_first = true}}) {
    sluice::list_events(db, filter);
    bool by_index = false;
    for (const std::string& sql : recorder.take()) {
      if (sql.find("FROM sluice_events") == std::string::npos) continue;
      const auto lines = plan(db, sql);
      CAPTURE(sql);
      CHECK(large_scans(lines).empty());
      CHECK(!mentions(lines, "SCAN sluice_events"));
      by_index = by_index || mentions(lines, "COVERING INDEX sluice_events_created");
    }
    CAPTURE(filter.newest_first);
    CAPTURE(filter.after_seq);
    CAPTURE(filter.until.has_value());
    CHECK(by_index);
  }
  // No filter: by seq from the page's start.
  const auto lines = search_plan(db, recorder, {.after_seq = 20});
  CHECK(mentions(lines, "USING INTEGER PRIMARY KEY (rowid>?)"));
}

TEST_CASE("the console's other calls read the large tables through indexes") {
  SQLite::Database db = sluice::open_database(":memory:");
  sluice::Outbox outbox(db);
  sluice::Worker worker(db);
  worker.subscribe("billing", "orders", [](const sluice::Event& e, sluice::Context&) {
    if (e.payload == R"({"fail":true})") throw sluice::PermanentError("declined");
  });
  for (int i = 0; i < 20; ++i) {
    outbox.enqueue_now({.topic = "orders", .payload = i % 4 ? "{}" : R"({"fail":true})"});
  }
  worker.run_until_idle();
  sluice::record_audit(db, {.action = "prune", .filter = "{}"});
  const sluice::Event event = sluice::list_events(db, {.topic = "orders"}).front();

  StatementRecorder recorder(db);
  sluice::consumer_stats(db);
  sluice::find_event(db, event.id);
  sluice::delivery_statuses(db, event);
  sluice::attempt_history(db, event);
  sluice::list_dead_letters(db, {});
  sluice::list_dead_letters(db, {.consumer = "billing", .topic = "orders"});
  sluice::list_dead_letters(db, {.event_ids = {event.id}, .consumer = "billing"});
  sluice::list_audit(db, 0, 100);
  sluice::count_backfill(db, "billing", {.since = sluice::system_clock()->now()});
  sluice::count_backfill(db, "billing", {.from_event_id = event.id});
  sluice::list_workers(db);
  sluice::held_claims(db);
  const std::set<std::string> statements = recorder.take();
  CHECK(statements.size() >= 10);
  for (const std::string& sql : statements) {
    const auto lines = plan(db, sql);
    const auto scans = large_scans(lines);
    CAPTURE(sql);
    CHECK(scans.empty());
  }
}
