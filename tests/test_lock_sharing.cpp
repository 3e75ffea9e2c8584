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

#include "commit_signal.hpp"
#include "data_version.hpp"
#include "lock_sharing.hpp"
#include "sluice/database.hpp"
#include "support/fixture.hpp"
#include "support/temp_dir.hpp"

using namespace sluice;
using sluice::test::Fixture;
using sluice::test::TempDir;
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

TEST_CASE("a worker draining alone leaves sluice's writers a gap every 20 ms, 2% of its time") {
  TempDir dir;
  SQLite::Database db = open_database(dir.file("app.db"));
  DataVersion version(db);
  LockSharing sharing(version, CommitSignal::of(db));
  // Two seconds of steps of 2 ms each, as at batch 512, with nobody else committing: short of
  // LockSharing::kQuietPeriod, so only short gaps are due.
  constexpr auto kStep = std::chrono::milliseconds(2);
  Steady::time_point began = Steady::now();
  Steady::duration held{};
  Steady::duration gaps{};
  Steady::duration since_gap{};
  Steady::duration longest_without_gap{};
  for (int i = 0; i < 1000; ++i) {
    const Steady::duration gap = sharing.gap_after(began, kStep, false);
    held += kStep;
    since_gap += kStep;
    if (gap > Steady::duration::zero()) {
      // Longer than the 250 us poll of a writer opened by sluice: its next try finds it free.
      CHECK(gap >= std::chrono::microseconds(300));
      gaps += gap;
      longest_without_gap = std::max(longest_without_gap, since_gap);
      since_gap = {};
    }
    began += kStep + gap;
  }
  CHECK(gaps > Steady::duration::zero());
  CHECK(gaps <= held * 3 / 100);
  CHECK(longest_without_gap <= std::chrono::milliseconds(25));
}

TEST_CASE(
    "a sluice writer of this process that waits finds the lock free after the worker's step") {
  TempDir dir;
  SQLite::Database db = open_database(dir.file("app.db"));
  DataVersion version(db);
  CommitSignal* signal = CommitSignal::of(db);
  LockSharing sharing(version, signal);
  const Steady::time_point began = Steady::now();
  CHECK_FALSE(signal->writer_waited_since(began));
  // The busy handler of a connection opened by sluice notes each try; this one gives up soon.
  Options impatient;
  impatient.busy_timeout = std::chrono::milliseconds(5);
  SQLite::Database writer = open_database(dir.file("app.db"), impatient);
  writer.exec("CREATE TABLE app_rows (at INTEGER NOT NULL)");
  db.exec("BEGIN IMMEDIATE");
  CHECK_THROWS(writer.exec("INSERT INTO app_rows VALUES (1)"));
  db.exec("ROLLBACK");
  CHECK(signal->writer_waited_since(began));
  // A short step, nowhere near 20 ms of holding: the gap is for the writer seen waiting.
  CHECK(sharing.gap_after(began, std::chrono::microseconds(200), true) >=
        std::chrono::microseconds(300));
  CHECK(sharing.gap_after(began, std::chrono::microseconds(200), false) ==
        Steady::duration::zero());
}

TEST_CASE(
    "a step longer than 20 ms, a handler slower than the batch budget, is followed by a gap") {
  TempDir dir;
  SQLite::Database db = open_database(dir.file("app.db"));
  DataVersion version(db);
  LockSharing sharing(version, CommitSignal::of(db));
  const Steady::time_point began = Steady::now();
  CHECK(sharing.gap_after(began, std::chrono::milliseconds(60), false) >=
        std::chrono::microseconds(300));
  // The next 20 ms of holding start from there.
  CHECK(sharing.gap_after(began, std::chrono::milliseconds(2), false) == Steady::duration::zero());
}

TEST_CASE("a worker on an in-memory database never leaves a gap: nobody can wait for it") {
  SQLite::Database db = open_database(":memory:");
  DataVersion version(db);
  LockSharing sharing(version, CommitSignal::of(db));
  REQUIRE(CommitSignal::of(db) == nullptr);
  CHECK(sharing.gap_after(Steady::now(), std::chrono::milliseconds(60), true) ==
        Steady::duration::zero());
}
