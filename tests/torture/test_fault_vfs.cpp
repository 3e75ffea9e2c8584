// The fault-injection VFS on raw SQLite: it fails exactly the call it is told to, SQLite reports
// that failure, and a transaction hit by it is all or nothing.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Exception.h>
#include <SQLiteCpp/Transaction.h>
#include <doctest/doctest.h>

#include "fault_vfs.hpp"
#include "temp_dir.hpp"

namespace sluice::torture {
namespace {

SQLite::Database open_on(const std::string& path, const FaultVfs& vfs) {
  SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE, 0, vfs.name().c_str());
  db.exec("PRAGMA journal_mode=WAL");
  db.exec("CREATE TABLE IF NOT EXISTS t(x INTEGER, pad BLOB)");
  return db;
}

void insert_rows(SQLite::Database& db, int rows) {
  SQLite::Transaction tx(db);
  for (int i = 0; i < rows; ++i) db.exec("INSERT INTO t VALUES (1, zeroblob(3000))");
  tx.commit();
}

long long row_count(const std::string& path) {
  SQLite::Database db(path, SQLite::OPEN_READONLY);
  REQUIRE(db.execAndGet("PRAGMA integrity_check").getString() == "ok");
  return db.execAndGet("SELECT count(*) FROM t").getInt64();
}

TEST_CASE("fault vfs passes every call through while disarmed") {
  TempDir dir;
  FaultVfs vfs("fault-passthrough");
  {
    auto db = open_on(dir.file("a.db"), vfs);
    insert_rows(db, 5);
  }
  CHECK(row_count(dir.file("a.db")) == 5);
  CHECK(vfs.faults() == 0);
}

TEST_CASE("fault vfs fails the first sync of a commit with SQLITE_IOERR_FSYNC") {
  TempDir dir;
  FaultVfs vfs("fault-sync");
  auto db = open_on(dir.file("a.db"), vfs);
  vfs.arm({.fail_at = 1, .persistent = false, .error = SQLITE_IOERR, .calls = kSync});
  int extended = 0;
  try {
    insert_rows(db, 3);
  } catch (const SQLite::Exception& e) {
    extended = e.getExtendedErrorCode();
  }
  CHECK(extended == SQLITE_IOERR_FSYNC);
  CHECK(vfs.faults() == 1);
}

TEST_CASE("fault vfs reports SQLITE_FULL for a disk-full plan") {
  TempDir dir;
  FaultVfs vfs("fault-full");
  auto db = open_on(dir.file("a.db"), vfs);
  vfs.arm({.fail_at = 1, .persistent = true, .error = SQLITE_FULL, .calls = kWrite | kTruncate});
  int code = 0;
  try {
    insert_rows(db, 3);
  } catch (const SQLite::Exception& e) {
    code = e.getErrorCode();
  }
  CHECK(code == SQLITE_FULL);
}

// Fails call N of a 20-row transaction for every N until the transaction completes unharmed:
// each failure is an error to the caller, and the file then holds all rows or none.
void sweep(const FaultPlan& base, const char* vfs_name) {
  TempDir dir;
  FaultVfs vfs(vfs_name);
  long long expected = 0;
  long long injected_points = 0;
  for (long long n = 1;; ++n) {
    REQUIRE(n < 10000);
    const std::string path = dir.file("sweep.db");
    bool failed = false;
    {
      auto db = open_on(path, vfs);
      FaultPlan plan = base;
      plan.fail_at = n;
      vfs.arm(plan);
      try {
        insert_rows(db, 20);
      } catch (const SQLite::Exception&) {
        failed = true;
      }
      vfs.disarm();
    }
    const long long rows = row_count(path);
    CHECK((rows == expected || rows == expected + 20));
    if (rows == expected + 20) expected = rows;
    if (!failed && vfs.faults() == 0) break;
    ++injected_points;
  }
  CHECK(injected_points > 5);
}

TEST_CASE("fault vfs sweep: one failing call at every index leaves each commit whole") {
  sweep({.persistent = false, .error = SQLITE_IOERR, .calls = kAnyIo}, "fault-sweep-once");
}

TEST_CASE("fault vfs sweep: persistent failure from every index leaves each commit whole") {
  sweep({.persistent = true, .error = SQLITE_IOERR, .calls = kAnyIo}, "fault-sweep-persist");
}

TEST_CASE("fault vfs sweep: disk full at every write leaves each commit whole") {
  sweep({.persistent = true, .error = SQLITE_FULL, .calls = kWrite | kTruncate},
        "fault-sweep-full");
}

}  // namespace
}  // namespace sluice::torture
