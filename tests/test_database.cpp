#include <doctest/doctest.h>

#include <fstream>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::TempDir;

TEST_CASE("open_database creates the schema in WAL mode and records its version") {
  TempDir dir;
  SQLite::Database db = open_database(dir.file("a.db"));
  CHECK(stored_schema_version(db) == schema_version());
  CHECK(db.execAndGet("PRAGMA journal_mode").getString() == "wal");
  CHECK(db.tableExists("sluice_events"));
  CHECK(db.tableExists("sluice_inbox"));
}

TEST_CASE("synchronous follows the options") {
  TempDir dir;
  Options options;
  CHECK(open_database(dir.file("full.db"), options).execAndGet("PRAGMA synchronous").getInt() == 2);
  options.synchronous = Synchronous::kNormal;
  CHECK(open_database(dir.file("normal.db"), options).execAndGet("PRAGMA synchronous").getInt() ==
        1);
}

TEST_CASE("kExisting refuses to create a missing file") {
  TempDir dir;
  CHECK_THROWS_AS(open_database(dir.file("missing.db"), {}, OpenMode::kExisting), NotFound);
  CHECK_FALSE(std::filesystem::exists(dir.file("missing.db")));
}

TEST_CASE("a file that is not a database is refused and left untouched") {
  TempDir dir;
  const std::string path = dir.file("notes.txt");
  std::ofstream(path) << "these are not the droids you are looking for, nor a database file at all";
  const auto size = std::filesystem::file_size(path);
  CHECK_THROWS_AS(open_database(path), NotADatabaseError);
  CHECK(std::filesystem::file_size(path) == size);
}

TEST_CASE("a newer schema is refused naming both versions") {
  TempDir dir;
  const std::string path = dir.file("newer.db");
  {
    SQLite::Database db = open_database(path);
    db.exec("UPDATE sluice_meta SET value = 99 WHERE name = 'schema_version'");
  }
  try {
    open_database(path);
    FAIL("expected SchemaVersionError");
  } catch (const SchemaVersionError& e) {
    CHECK(e.file_version() == 99);
    CHECK(e.library_version() == schema_version());
    CHECK(std::string(e.what()).find("99") != std::string::npos);
  }
}

TEST_CASE("schema work refuses to run inside the caller's transaction") {
  SQLite::Database db(":memory:", SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  db.exec("BEGIN");
  CHECK_THROWS_AS(ensure_schema(db), TransactionError);
  db.exec("ROLLBACK");
  CHECK(ensure_schema(db) == 0);
  CHECK(ensure_schema(db) == schema_version());
}

TEST_CASE("a corrupt file gives a clear database error, never a crash") {
  TempDir dir;
  const std::string path = dir.file("corrupt.db");
  {
    SQLite::Database db = open_database(path);
    Outbox outbox(db);
    for (int i = 0; i < 200; ++i) outbox.enqueue_now({.topic = "t", .payload = "[1,2,3]"});
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(4096);
    const std::string junk(4096 * 6, '\x5a');
    file.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  bool raised = false;
  try {
    SQLite::Database db = open_database(path);
    db.exec("PRAGMA integrity_check");
    Outbox outbox(db);
    for (int i = 0; i < 50; ++i) outbox.enqueue_now({.topic = "t"});
    (void)consumer_stats(db);
    (void)list_events(db, {.limit = 1000});
  } catch (const Error&) {
    raised = true;
  }
  CHECK(raised);
  CHECK(std::filesystem::exists(path));
}
