// sluice::enqueue(db, event): the outbox on the caller's connection in one call, without an
// Outbox, its statements kept per connection, the app's hooks left alone.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <filesystem>
#include <set>
#include <sluice/sluice.hpp>

#include "support/temp_dir.hpp"

using namespace sluice;

namespace {

long long events(SQLite::Database& db) {
  return db.execAndGet("SELECT count(*) FROM sluice_events").getInt64();
}

std::set<sqlite3_stmt*> statements_on(SQLite::Database& db) {
  std::set<sqlite3_stmt*> all;
  for (sqlite3_stmt* s = sqlite3_next_stmt(db.getHandle(), nullptr); s != nullptr;
       s = sqlite3_next_stmt(db.getHandle(), s)) {
    all.insert(s);
  }
  return all;
}

int count_commit(void* commits, sqlite3*, const char*, int) {
  ++*static_cast<int*>(commits);
  return SQLITE_OK;
}

}  // namespace

TEST_CASE("enqueue commits and rolls back with the caller's transaction") {
  SQLite::Database db = open_database(":memory:");
  Worker worker(db);
  int handled = 0;
  worker.subscribe("billing", "order.placed", [&](const Event&, Context&) { ++handled; });
  {
    SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
    CHECK_FALSE(enqueue(db, {.topic = "order.placed"}).duplicate());
  }  // rolled back
  CHECK(events(db) == 0);
  SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
  const EnqueueResult stored = enqueue(db, {.topic = "order.placed", .dedup_key = "order-1"});
  const EnqueueResult again = enqueue(db, {.topic = "order.placed", .dedup_key = "order-1"});
  tx.commit();
  CHECK(again.status == EnqueueResult::Status::kDuplicateDedupKey);
  CHECK(again.id == stored.id);
  CHECK(events(db) == 1);
  CHECK(worker.run_until_idle().delivered == 1);
  CHECK(handled == 1);
}

TEST_CASE("enqueue refuses to run without a transaction or with bad input, writing nothing") {
  SQLite::Database db = open_database(":memory:");
  CHECK_THROWS_AS(enqueue(db, {.topic = "t"}), TransactionError);
  SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
  CHECK_THROWS_AS(enqueue(db, {.topic = ""}), InvalidArgument);
  CHECK_THROWS_AS(enqueue(db, {.topic = "t", .payload = "{"}), InvalidArgument);
  Options small;
  small.max_payload_bytes = 4;
  CHECK_THROWS_AS(enqueue(db, {.topic = "t", .payload = R"({"a":1})"}, small), InvalidArgument);
  CHECK(events(db) == 0);
}

TEST_CASE("enqueue on a file without the sluice schema says to open it with open_database") {
  SQLite::Database db(":memory:", SQLite::OPEN_READWRITE);
  SQLite::Transaction tx(db);
  CHECK_THROWS_AS(enqueue(db, {.topic = "t"}), TransactionError);
}

TEST_CASE("enqueue prepares its statements once per connection") {
  SQLite::Database db = open_database(":memory:");
  SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
  enqueue(db, {.topic = "t"});
  const auto prepared = statements_on(db);
  CHECK_FALSE(prepared.empty());
  for (int i = 0; i < 10; ++i) enqueue(db, {.topic = "t"});
  CHECK(statements_on(db) == prepared);
  tx.commit();
}

TEST_CASE("enqueue leaves the app's WAL hook in place") {
  test::TempDir dir;
  SQLite::Database db = open_database(dir.file("app.db"));
  int commits = 0;
  sqlite3_wal_hook(db.getHandle(), count_commit, &commits);
  SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
  enqueue(db, {.topic = "t"});
  tx.commit();
  CHECK(commits == 1);
}

TEST_CASE("a connection that enqueued closes, and its statements go with it") {
  test::TempDir dir;
  const std::string path = dir.file("app.db");
  for (int round = 1; round <= 3; ++round) {
    {
      SQLite::Database db = open_database(path);
      SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
      enqueue(db, {.topic = "t"});
      tx.commit();
      CHECK(events(db) == round);
    }
    // The last connection to a WAL file removes the -wal file when it closes, and only then.
    CHECK_FALSE(std::filesystem::exists(path + "-wal"));
  }
}

TEST_CASE("enqueue stamps events with the connection's clock") {
  const TimePoint long_ago{std::chrono::hours(24 * 365 * 10)};
  Options manual;
  manual.clock = std::make_shared<ManualClock>(long_ago);
  SQLite::Database db = open_database(":memory:", manual);
  SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
  const std::string id = enqueue(db, {.topic = "t"}).id;
  tx.commit();
  CHECK(find_event(db, id).created_at == long_ago);
}
