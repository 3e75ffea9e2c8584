#include "foreign_writer_cases.hpp"

#include <SQLiteCpp/Statement.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "delivery_rig.hpp"
#include "latency_summary.hpp"
#include "stopwatch.hpp"
#include "workload.hpp"

namespace bench {
namespace {

using Steady = std::chrono::steady_clock;

// Python's sqlite3 module waits 5 s by default.
constexpr int kBusyTimeoutMs = 5000;
// The app writes a row this often.
constexpr std::chrono::milliseconds kWriterPause{100};
constexpr double kWaitTargetMs = 1000;

constexpr const char* kAppTable =
    "CREATE TABLE IF NOT EXISTS bench_app_rows(id INTEGER PRIMARY KEY, at INTEGER NOT NULL)";

struct ForeignWrite {
  Steady::time_point began;
  double wait_ms = 0;
  int rc = SQLITE_OK;
};

// The app's other code: one row every kWriterPause, on its own thread, through its own
// connection opened with the plain C API and sqlite3_busy_timeout, i.e. SQLite's default busy
// handler, as Python's sqlite3 module and the sqlite3 shell have. Not thread-safe.
class ForeignWriter {
 public:
  explicit ForeignWriter(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
      sqlite3_close(db_);
      throw std::runtime_error("bench: foreign writer cannot open " + path);
    }
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    thread_ = std::thread([this] { run(); });
  }
  ~ForeignWriter() {
    stop();
    sqlite3_close(db_);
  }
  ForeignWriter(const ForeignWriter&) = delete;
  ForeignWriter& operator=(const ForeignWriter&) = delete;

  // Stops writing (a write under way finishes) and returns every write made.
  std::vector<ForeignWrite> stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    return writes_;
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      lock.unlock();
      ForeignWrite write;
      write.began = Steady::now();
      write.rc =
          sqlite3_exec(db_, "INSERT INTO bench_app_rows(at) VALUES(1)", nullptr, nullptr, nullptr);
      write.wait_ms =
          std::chrono::duration<double, std::milli>(Steady::now() - write.began).count();
      writes_.push_back(write);
      lock.lock();
      // The app's pace: this wait is the workload, stop() only cuts it short.
      wake_.wait_for(lock, kWriterPause, [this] { return stopping_; });
    }
  }

  sqlite3* db_ = nullptr;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<ForeignWrite> writes_;  // the thread's until it is joined
  std::thread thread_;
};

// A handler written plainly, like the one the starvation was first seen beside: it parses the
// payload, looks at an app table and inserts its row, preparing both statements on every call.
// About ten times the floor's work per event: a batch holds the lock for over 10 ms and writes
// few WAL pages per millisecond, so the checkpoints that also leave the lock free are rare.
void plain_handler(const sluice::Event& event, sluice::Context& context) {
  const nlohmann::json order = nlohmann::json::parse(event.payload);
  SQLite::Statement look(context.db(), "SELECT count(*) FROM bench_app_rows WHERE id = ?");
  look.bind(1, static_cast<int64_t>(event.seq));
  look.executeStep();
  SQLite::Statement insert(context.db(), kInsertDomainRow);
  insert.bind(1, event.id);
  insert.bind(2, order.dump());
  insert.exec();
}

struct Drain {
  double events_per_s = 0;
  std::vector<double> waits_ms;  // of the writes begun during the drain that got through
  int failed = 0;                // writes begun during the drain that did not (SQLITE_BUSY)
};

// Drains `backlog` events on this thread, beside a foreign writer or not.
Drain drain_beside(const std::string& path, const Storage& storage, long long backlog,
                   bool with_writer) {
  DeliveryRig rig(path, storage, storage.options(), 0);
  rig.worker().subscribe("plain", kTopic, plain_handler);
  rig.producer().exec(kAppTable);
  // A worker that has delivered before, as in a running app: the writer's commits from now on
  // are ones it can see.
  rig.enqueue_backlog(1);
  rig.worker().run_until_idle();
  std::optional<ForeignWriter> writer;
  if (with_writer) writer.emplace(path);
  rig.enqueue_backlog(backlog);

  const Steady::time_point began = Steady::now();
  Stopwatch stopwatch;
  const sluice::DrainResult drained = rig.worker().run_until_idle();
  const double seconds = stopwatch.unstolen_seconds();
  const Steady::time_point ended = Steady::now();
  if (drained.delivered != backlog) throw std::runtime_error("bench: the drain lost events");

  Drain result;
  result.events_per_s = backlog / seconds;
  if (!writer) return result;
  for (const ForeignWrite& write : writer->stop()) {
    if (write.began < began || write.began >= ended) continue;
    if (write.rc == SQLITE_OK) {
      result.waits_ms.push_back(write.wait_ms);
    } else {
      ++result.failed;
    }
  }
  return result;
}

}  // namespace

void run_foreign_writer_cases(Run& run) {
  const long long backlog = run.size(300'000, 3'000);
  for (const Storage& storage :
       {file_storage(sluice::Synchronous::kFull), file_storage(sluice::Synchronous::kNormal)}) {
    const std::string name = "sluice foreign writer beside a full drain " + storage.name;
    if (!run.wants(name)) continue;
    run.guarded(name, [&] {
      double alone = 0, beside = 0;
      std::vector<double> waits_ms;
      int failed = 0;
      for (int round = 0; round < run.rounds(); ++round) {
        for (bool with_writer : {false, true}) {
          const std::string path = run.scratch().fresh_database("foreign", storage);
          Drain drain = drain_beside(path, storage, backlog, with_writer);
          ScratchDir::remove_database(path);
          (with_writer ? beside : alone) =
              std::max(with_writer ? beside : alone, drain.events_per_s);
          waits_ms.insert(waits_ms.end(), drain.waits_ms.begin(), drain.waits_ms.end());
          failed += drain.failed;
        }
      }
      Result result;
      result.name = name;
      result.events = static_cast<long long>(waits_ms.size());
      result.events_per_s = beside;
      result.floor_events_per_s = alone;
      result.ratio = beside / alone;
      result.latency = summarize_latencies(std::move(waits_ms));
      result.target = "0 busy, p99 <= 1000 ms";
      result.met = failed == 0 && result.events > 0 && result.latency->p99_ms <= kWaitTargetMs;
      result.figures = {{"busy", static_cast<double>(failed)}};
      result.note = "events = the writer's writes during the drains; floor = the drain without it";
      run.add(result);
    });
  }
}

}  // namespace bench
