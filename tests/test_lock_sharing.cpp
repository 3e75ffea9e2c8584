// Other writers of the file share SQLite's write lock with a worker at full drain, including
// writers that use SQLite's default busy handler (any driver's "busy timeout"), which sleeps
// 1, 2, 5 ... 100 ms between its tries and so misses the short gaps a busy worker leaves.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::Fixture;
using Steady = std::chrono::steady_clock;

namespace {

// What a writer with the default busy handler saw.
struct ForeignWrites {
  int busy = 0;
  std::vector<Steady::duration> waits;  // of the writes that got through, in order
};

// Inserts a row every 100 ms for `span` through its own connection, as an app's other code
// would: the plain C API with sqlite3_busy_timeout, i.e. SQLite's default busy handler.
ForeignWrites write_beside(const std::string& path, Steady::duration span) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  ForeignWrites seen;
  const auto until = Steady::now() + span;
  while (Steady::now() < until) {
    const auto began = Steady::now();
    const int rc =
        sqlite3_exec(db, "INSERT INTO app_rows (at) VALUES (1)", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) {
      seen.waits.push_back(Steady::now() - began);
    } else {
      CHECK_MESSAGE(rc == SQLITE_BUSY, sqlite3_errmsg(db));
      ++seen.busy;
    }
    // The app's pace, not synchronisation.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  sqlite3_close(db);
  return seen;
}

}  // namespace

TEST_CASE("a writer with SQLite's default busy handler is not starved by a draining worker") {
  Fixture f(true);
  f.db.exec("CREATE TABLE app_rows (at INTEGER NOT NULL)");
  {
    SQLite::Transaction tx(f.db, SQLite::TransactionBehavior::IMMEDIATE);
    for (int i = 0; i < 10'000; ++i) f.outbox.enqueue({.topic = "t", .payload = "{}"});
    tx.commit();
  }
  // Each delivery holds the write lock for a millisecond: the backlog takes longer to drain than
  // the writer writes, so the worker holds the lock nearly all the time, as at full drain.
  Worker worker(f.dir.file("app.db"), f.options);
  std::atomic<int> handled{0};
  worker.subscribe("slow", "t",
                   [&](const Event&, Context&) {
                     std::this_thread::sleep_for(std::chrono::milliseconds(1));
                     ++handled;
                   },
                   {.start_from = StartFrom::kOldest});
  worker.start();
  // Longer than the writer's 5 s busy timeout, so a starved write would fail within it.
  const ForeignWrites seen = write_beside(f.dir.file("app.db"), std::chrono::seconds(6));
  worker.stop();

  CHECK(handled.load() < 10'000);  // the worker was busy the whole time
  CHECK(seen.busy == 0);
  REQUIRE(seen.waits.size() >= 3);
  // A write waits longest until the worker has seen the writer commit, at most
  // LockSharing::kQuietPeriod of lock holding and a long gap (~3.1 s); from then on, while the
  // writer keeps writing, at most about a second.
  const auto seconds_of = [](Steady::duration d) {
    return std::chrono::duration<double>(d).count();
  };
  CHECK(seconds_of(*std::max_element(seen.waits.begin(), seen.waits.end())) <= 4.0);
  CHECK(std::count_if(seen.waits.begin(), seen.waits.end(),
                      [&](Steady::duration wait) { return seconds_of(wait) > 1.0; }) <= 1);
}
