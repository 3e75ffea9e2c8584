// What a started worker does while idle: at the end of each sleep it reads PRAGMA data_version
// and the clock, and looks at none of its consumers unless a commit, a due retry or a clock set
// back calls for it (issue 16: idle CPU of a worker with 100 consumers). A retry still falls due
// on time without any commit, also when the clock steps forward or is set back meanwhile.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <vector>

#include "file_watch.hpp"
#include "idle_check.hpp"
#include "sluice/outbox.hpp"
#include "support/fixture.hpp"
#include "support/statement_counter.hpp"
#include "wake_order.hpp"

using namespace sluice;
using sluice::test::Fixture;
using sluice::test::StatementCounter;
using std::chrono::hours;
using std::chrono::seconds;

namespace {

constexpr auto kPatience = seconds(20);
constexpr const char* kDataVersion = "PRAGMA data_version";
// How IdleCheck's statement begins: the worker runs it once it has nothing to do.
constexpr const char* kIdleCheck = "SELECT (SELECT min(t) FROM (SELECT min(d.next_attempt_at)";

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

TEST_CASE("a woken worker delivers the event of one of 100 consumers before it steps the others") {
  // Each consumer of a topic of its own. Every step of a consumer whose cursor is behind the
  // newest event takes the write lock, whatever the event's topic: without the wake order the
  // event of the last consumer waited for 99 write transactions of the others.
  Fixture f(true);
  Worker worker(f.dir.file("app.db"), quick_idle(f));
  std::atomic<long long> commits{0};
  sqlite3_commit_hook(
      worker.db().getHandle(),
      [](void* count) {
        ++*static_cast<std::atomic<long long>*>(count);
        return 0;
      },
      &commits);
  Deliveries delivered;
  std::atomic<long long> commits_before_handler{-1};
  for (int i = 0; i < 100; ++i) {
    worker.subscribe("c" + std::to_string(i), "t" + std::to_string(i), [&](const Event&, Context&) {
      commits_before_handler = commits.load();
      delivered.add();
    });
  }
  worker.run_until_idle();
  StatementLog log(worker.db());
  StopOnExit stop_on_exit{worker};
  worker.start();
  REQUIRE(log.wait_for(kIdleCheck, 1));
  const long long idle_commits = commits.load();
  f.publish("t99");
  REQUIRE(delivered.wait_for(1));
  // Its claim is the one write transaction before the handler's.
  CHECK(commits_before_handler.load() - idle_commits == 1);
  // Then the other 99 move their cursors past it in one write, not one each.
  REQUIRE(log.wait_for(kIdleCheck, 2));
  CHECK(commits.load() - idle_commits == 3);
}

TEST_CASE("the wake order names the consumers with an event of their topics past their cursor") {
  Fixture f(true);
  Worker worker(f.dir.file("app.db"), f.options);
  const auto ignore = [](const Event&, Context&) {};
  worker.subscribe("a", "ta", ignore);
  worker.subscribe("b", "tb", ignore);
  worker.subscribe("c", "tc", ignore);
  worker.run_until_idle();
  std::vector<std::int64_t> ids;
  SQLite::Statement consumers(f.db, "SELECT id FROM sluice_consumers ORDER BY name");
  while (consumers.executeStep()) ids.push_back(consumers.getColumn(0).getInt64());
  REQUIRE(ids.size() == 3);
  WakeOrder order(f.db, ids);
  CHECK(order.first().empty());
  f.publish("tc");
  f.publish("ta");
  f.publish("elsewhere");
  CHECK(order.first() == std::vector<std::int64_t>{ids[0], ids[2]});
  worker.run_until_idle();
  CHECK(order.first().empty());
  // A consumer far behind the newest event counts as having news without a look at each event.
  for (int i = 0; i < 600; ++i) f.publish("elsewhere");
  CHECK(order.first() == ids);
  // The others' cursors move past the events of no topic of theirs; a consumer with an event of
  // its topics keeps its cursor, for its own step to claim the event.
  worker.run_until_idle();
  const auto cursor = [&](std::int64_t id) {
    SQLite::Statement read(f.db, "SELECT cursor FROM sluice_consumers WHERE id = ?");
    read.bind(1, static_cast<int64_t>(id));
    REQUIRE(read.executeStep());
    return read.getColumn(0).getInt64();
  };
  const std::int64_t a_before = cursor(ids[0]);
  f.publish("elsewhere");
  const std::int64_t newest = f.publish("elsewhere").seq;
  f.publish("ta");
  const std::int64_t last = f.publish("elsewhere").seq;
  CHECK(newest > a_before);
  order.skip_past_others({ids[0], ids[1], ids[2]});
  CHECK(cursor(ids[0]) == a_before);
  CHECK(cursor(ids[1]) == last);
  CHECK(cursor(ids[2]) == last);
  // With nobody behind, no write transaction at all.
  const StatementCounter begins(f.db, "BEGIN");
  order.skip_past_others({ids[1], ids[2]});
  CHECK(begins.count() == 0);
}

TEST_CASE("a commit the kernel does not report is delivered by the watched worker's safety net") {
  // Written through hard links in another directory: the watched directory sees no event, and a
  // connection by another path raises no commit signal of the worker's. A poll interval of 2 ms
  // puts the safety net (FileWatch::kSafetyNetPolls of them) at 100 ms; without it the event
  // would wait for the next commit, which never comes.
  Fixture f(true);
  const std::string path = f.dir.file("app.db");
  Options options = f.options;
  options.poll_interval = std::chrono::milliseconds(2);
  Deliveries delivered;
  Worker worker(path, options);
  worker.subscribe("c", "t", [&](const Event&, Context&) { delivered.add(); });
  worker.run_until_idle();
  // The two open connections keep the WAL and its index, so the links stay the same files.
  const std::filesystem::path elsewhere = f.dir.path() / "elsewhere";
  std::filesystem::create_directory(elsewhere);
  for (const std::string suffix : {"", "-wal", "-shm"}) {
    std::filesystem::create_hard_link(path + suffix, elsewhere / ("app.db" + suffix));
  }
  StatementLog log(worker.db());
  StopOnExit stop_on_exit{worker};
  worker.start();
  REQUIRE(log.wait_for(kIdleCheck, 1));
  // Past the look after the worker's own commits (kPublishPatience: about nine reads), into the
  // sleeps only the safety net ends.
  REQUIRE(log.wait_for(kDataVersion, log.count(kDataVersion) + 10));
  FileWatch watch(path);
  REQUIRE(watch.available());
  SQLite::Database other = open_database((elsewhere / "app.db").string(), f.options);
  NewEvent event;
  event.topic = "t";
  event.payload = "{}";
  Outbox(other, f.options).enqueue_now(event);
  CHECK_FALSE(watch.wait(std::chrono::steady_clock::duration::zero()));  // the kernel said nothing
  CHECK(delivered.wait_for(1));
}
