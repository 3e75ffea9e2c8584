// What a started worker does while idle: at the end of each sleep it reads PRAGMA data_version
// and the clock, and looks at none of its consumers unless a commit, a due retry or a clock set
// back calls for it (issue 16: idle CPU of a worker with 100 consumers). A retry still falls due
// on time without any commit, also when the clock steps forward or is set back meanwhile.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <vector>

#include "idle_check.hpp"
#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::Fixture;
using std::chrono::hours;
using std::chrono::seconds;

namespace {

constexpr auto kPatience = seconds(20);
constexpr const char* kDataVersion = "PRAGMA data_version";
// How IdleCheck's statement begins: the worker runs it once it has nothing to do.
constexpr const char* kIdleCheck = "SELECT (SELECT min(d.next_attempt_at)";

// Thread-safe. Counts the statements a connection runs on any thread (the worker's), by text.
class StatementLog {
 public:
  explicit StatementLog(SQLite::Database& db) : db_(db) {
    sqlite3_trace_v2(db_.getHandle(), SQLITE_TRACE_STMT, &StatementLog::on_statement, this);
  }
  ~StatementLog() { sqlite3_trace_v2(db_.getHandle(), 0, nullptr, nullptr); }
  StatementLog(const StatementLog&) = delete;
  StatementLog& operator=(const StatementLog&) = delete;

  // The text of every statement run so far.
  std::vector<std::string> texts() {
    std::lock_guard lock(mutex_);
    std::vector<std::string> texts;
    for (const auto& entry : counts_) texts.push_back(entry.first);
    return texts;
  }
  // Statements run so far whose text starts with `prefix`.
  long long count(const std::string& prefix) {
    std::lock_guard lock(mutex_);
    return count_locked(prefix);
  }
  // Statements run so far whose text does not start with `prefix`.
  long long count_other_than(const std::string& prefix) {
    std::lock_guard lock(mutex_);
    return total_ - count_locked(prefix);
  }
  // Waits until `count(prefix)` reaches `at_least`; false if it did not within kPatience.
  bool wait_for(const std::string& prefix, long long at_least) {
    std::unique_lock lock(mutex_);
    return ran_.wait_for(lock, kPatience, [&] { return count_locked(prefix) >= at_least; });
  }

 private:
  long long count_locked(const std::string& prefix) const {
    long long found = 0;
    for (const auto& [sql, times] : counts_) {
      if (sql.rfind(prefix, 0) == 0) found += times;
    }
    return found;
  }
  static int on_statement(unsigned, void* self, void* statement, void*) {
    auto& log = *static_cast<StatementLog*>(self);
    const char* sql = sqlite3_sql(static_cast<sqlite3_stmt*>(statement));
    {
      std::lock_guard lock(log.mutex_);
      ++log.counts_[sql == nullptr ? "" : sql];
      ++log.total_;
    }
    log.ran_.notify_all();
    return 0;
  }

  SQLite::Database& db_;
  std::mutex mutex_;
  std::condition_variable ran_;
  std::map<std::string, long long> counts_;
  long long total_ = 0;
};

// Stops a started worker when it goes, so that a failed REQUIRE stops it before what its handler
// or its connection's trace uses is destroyed. Declare it after those.
struct StopOnExit {
  Worker& worker;
  ~StopOnExit() { worker.stop(); }
};

// Counts handler calls that did not ask for a retry, and lets a test wait for them.
class Deliveries {
 public:
  void add() {
    {
      std::lock_guard lock(mutex_);
      ++count_;
    }
    changed_.notify_all();
  }
  bool wait_for(int at_least) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kPatience, [&] { return count_ >= at_least; });
  }
  int count() {
    std::lock_guard lock(mutex_);
    return count_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int count_ = 0;
};

// Options whose idle worker ends a sleep every FileWatch::kSafetyNetPolls poll intervals of 1 ms
// (while the kernel watches the file, as in these tests' temporary directories).
Options quick_idle(const Fixture& f) {
  Options options = f.options;
  options.poll_interval = std::chrono::milliseconds(1);
  return options;
}

// A worker whose consumer retries each event's first attempt an hour later, left idle with one
// such retry pending.
struct RetryDueInAnHour {
  explicit RetryDueInAnHour(Fixture& f) : worker(f.dir.file("app.db"), options(f)) {
    worker.subscribe("c", "t", [this](const Event&, Context& context) {
      if (context.attempt() == 1) return context.retry("later");
      delivered.add();
    });
    f.publish("t");
    worker.run_until_idle();
    REQUIRE(delivered.count() == 0);
  }
  static Options options(const Fixture& f) {
    Options options = quick_idle(f);
    options.retry.initial_backoff = hours(1);
    options.retry.max_backoff = hours(1);
    return options;
  }
  // Starts the worker and returns once it sleeps, having asked what it waits for.
  void start_and_idle(StatementLog& log) {
    worker.start();
    REQUIRE(log.wait_for(kIdleCheck, 1));
  }

  Deliveries delivered;
  Worker worker;
};

}  // namespace

TEST_CASE("an idle worker's sleeps end in a data_version read, not a look at its 100 consumers") {
  Fixture f(true);
  Deliveries delivered;
  Worker worker(f.dir.file("app.db"), quick_idle(f));
  for (int i = 0; i < 100; ++i) {
    worker.subscribe("c" + std::to_string(i), "t",
                     [&](const Event&, Context&) { delivered.add(); });
  }
  f.publish("t");
  worker.run_until_idle();
  REQUIRE(delivered.count() == 100);

  StatementLog log(worker.db());
  StopOnExit stop_on_exit{worker};
  worker.start();
  REQUIRE(log.wait_for(kIdleCheck, 1));
  const long long others_before = log.count_other_than(kDataVersion);
  const long long reads_before = log.count(kDataVersion);
  // Five more sleeps.
  REQUIRE(log.wait_for(kDataVersion, reads_before + 5));
  CHECK(log.count_other_than(kDataVersion) == others_before);

  // A commit still wakes it, and all 100 consumers get the event.
  f.publish("t");
  CHECK(delivered.wait_for(200));
}

TEST_CASE("an idle worker delivers a retry once the clock reaches it, with no commit") {
  Fixture f(true);
  RetryDueInAnHour idle(f);
  StatementLog log(idle.worker.db());
  StopOnExit stop_on_exit{idle.worker};
  idle.start_and_idle(log);
  // A clock stepped forward past the retry is one the worker sees only by reading it.
  f.clock->advance(hours(1));
  CHECK(idle.delivered.wait_for(1));
}

TEST_CASE("an idle worker re-anchors a retry once the clock is set back, with no commit") {
  Fixture f(true);
  RetryDueInAnHour idle(f);
  StatementLog log(idle.worker.db());
  StopOnExit stop_on_exit{idle.worker};
  idle.start_and_idle(log);
  // The hour the retry's backoff has run is unknown now: it is made due at once.
  f.clock->advance(-hours(2));
  CHECK(idle.delivered.wait_for(1));
}

TEST_CASE("the idle check finds due rows and claims through their indexes") {
  Fixture f(true);
  StatementLog log(f.db);
  IdleCheck check(f.db, "this-worker", {1, 2, 3});
  CHECK_FALSE(check.after(f.clock->now()).next_due.has_value());
  const std::vector<std::string> texts = log.texts();
  REQUIRE(texts.size() == 1);
  SQLite::Statement plan(f.db, "EXPLAIN QUERY PLAN " + texts.front());
  std::vector<std::string> searches;
  while (plan.executeStep()) {
    const std::string detail = plan.getColumn(3).getString();
    INFO(detail);
    // Only json_each's list of consumers is read whole.
    if (detail.rfind("SCAN ", 0) == 0 && detail != "SCAN CONSTANT ROW") {
      CHECK(detail.find("VIRTUAL TABLE") != std::string::npos);
    }
    if (detail.rfind("SEARCH ", 0) == 0) searches.push_back(detail);
  }
  auto searched = [&](const std::string& index) {
    return std::any_of(searches.begin(), searches.end(), [&](const std::string& detail) {
      return detail.find(index) != std::string::npos;
    });
  };
  CHECK(searched("sluice_deliveries_due"));
  CHECK(searched("sluice_claims_consumer"));
}
