#include "idle_cases.hpp"

#include <sqlite3.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "sluice/database.hpp"
#include "sluice/error.hpp"
#include "sluice/outbox.hpp"
#include "sluice/worker.hpp"
#include "stopwatch.hpp"
#include "workload.hpp"

namespace bench {
namespace {

// How long each idle worker is watched (a quick run: a fiftieth of it), after it has had this
// long to start its thread, look at the file once, and let the file events of its own start-up
// commits pass (it looks again for up to 127 ms after the last): with 100 consumers 200 ms did
// not always cover that, and one run counted 0.26 ms/s instead of 0.05. 20 s, not the issue's
// least of 10: a worker's cost there is four safety-net wakes of about 140 us each (thread
// schedstat), 0.04-0.06 ms/s, and now and then the machine adds 0.5-0.7 ms to a window
// (0.11-0.12 ms/s now and then, so far always in the 100-consumer window, the last of the five;
// never under strace).
constexpr std::chrono::milliseconds kIdleSpan{20000};
constexpr std::chrono::milliseconds kSettle{1000};
constexpr double kCpuTargetMsPerSecond = 0.1;

// Write transactions on one connection. A commit hook runs for every transaction that took the
// write lock, also for one that wrote nothing, which neither the WAL nor another connection's
// data_version shows; a rollback hook for those rolled back.
class WriteCounter {
 public:
  // Installs the hooks; call before another thread uses `db`. Must outlive the connection.
  void watch(sqlite3* db) {
    sqlite3_commit_hook(db, &WriteCounter::on_commit, this);
    sqlite3_rollback_hook(db, &WriteCounter::on_rollback, this);
  }
  long long count() const { return count_.load(); }

 private:
  static int on_commit(void* self) {
    ++static_cast<WriteCounter*>(self)->count_;
    return 0;
  }
  static void on_rollback(void* self) { ++static_cast<WriteCounter*>(self)->count_; }

  std::atomic<long long> count_{0};
};

// User and system CPU time of the whole process.
double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

long long wal_bytes(const std::string& path) {
  std::error_code missing;
  const auto size = std::filesystem::file_size(path + "-wal", missing);
  return missing ? 0 : static_cast<long long>(size);
}

// Brings a worker and its file into one idle state, delivering what is due first.
struct IdleState {
  const char* name;
  std::function<void(sluice::Worker&, sluice::Outbox&)> prepare;
};

sluice::NewEvent event_with_key(const std::string& key, const std::string& payload) {
  sluice::NewEvent event;
  event.topic = kTopic;
  event.key = key;
  event.payload = payload;
  return event;
}

void enqueue_some(sluice::Outbox& outbox) {
  for (int i = 0; i < 10; ++i) outbox.enqueue_now(event_with_key("", "{}"));
}

void ignore(const sluice::Event&, sluice::Context&) {}

// `count` consumers of one topic, each having delivered what was enqueued.
IdleState consumers(int count) {
  return {count == 10 ? "10 consumers" : "100 consumers",
          [count](sluice::Worker& worker, sluice::Outbox& outbox) {
            for (int i = 0; i < count; ++i) {
              worker.subscribe("idle-" + std::to_string(i), kTopic, ignore);
            }
            enqueue_some(outbox);
            worker.run_until_idle();
          }};
}

std::vector<IdleState> idle_states() {
  return {
      {"nothing to do",
       [](sluice::Worker& worker, sluice::Outbox& outbox) {
         worker.subscribe("idle", kTopic, ignore);
         enqueue_some(outbox);
         worker.run_until_idle();
       }},
      {"key parked behind a dead letter",
       [](sluice::Worker& worker, sluice::Outbox& outbox) {
         sluice::ConsumerOptions ordered;
         ordered.ordered = true;
         worker.subscribe(
             "idle", kTopic,
             [](const sluice::Event& event, sluice::Context&) {
               if (event.payload == R"({"poison":true})") throw sluice::PermanentError("poison");
             },
             ordered);
         outbox.enqueue_now(event_with_key("parked", R"({"poison":true})"));
         outbox.enqueue_now(event_with_key("parked", "{}"));  // held back behind it
         outbox.enqueue_now(event_with_key("flowing", "{}"));
         worker.run_until_idle();
       }},
      {"retry due in an hour",
       [](sluice::Worker& worker, sluice::Outbox& outbox) {
         sluice::ConsumerOptions later;
         later.retry = sluice::RetryPolicy{};
         later.retry->initial_backoff = std::chrono::hours(1);
         later.retry->max_backoff = std::chrono::hours(1);
         later.retry->jitter = 0;
         worker.subscribe(
             "idle", kTopic,
             [](const sluice::Event&, sluice::Context& context) {
               if (context.attempt() == 1) context.retry("later");
             },
             later);
         outbox.enqueue_now(event_with_key("", "{}"));
         worker.run_until_idle();
       }},
      consumers(10),
      consumers(100),
  };
}

Result watch_idle(const std::string& name, const std::string& path, const Storage& storage,
                  const IdleState& state, std::chrono::milliseconds span) {
  const sluice::Options options = storage.options();
  SQLite::Database producer = sluice::open_database(path, options);
  sluice::Outbox outbox(producer, options);
  WriteCounter writes;  // outlives the worker's connection
  sluice::Worker worker(path, options);
  state.prepare(worker, outbox);
  writes.watch(worker.db().getHandle());

  worker.start();
  std::this_thread::sleep_for(kSettle);
  const long long written_before = writes.count();
  const long long wal_before = wal_bytes(path);
  const double cpu_before = process_cpu_seconds();
  Stopwatch stopwatch;
  // The measured stretch: only the worker runs meanwhile.
  std::this_thread::sleep_for(span);
  const long long written = writes.count() - written_before;
  const double seconds = stopwatch.seconds();
  const double cpu_ms_per_second = (process_cpu_seconds() - cpu_before) * 1000 / seconds;
  const long long wal_growth = wal_bytes(path) - wal_before;
  worker.stop();

  Result result;
  result.name = name;
  result.events = written;
  result.events_per_s = written / seconds;
  result.target = "0 tx/s, CPU <= 0.1 ms/s, WAL +0";
  result.met = written == 0 && cpu_ms_per_second <= kCpuTargetMsPerSecond && wal_growth == 0;
  result.figures = {{"cpu_ms_per_s", cpu_ms_per_second},
                    {"wal_growth_bytes", static_cast<double>(wal_growth)},
                    {"seconds", seconds}};
  result.note = "events = write transactions while idle";
  return result;
}

}  // namespace

void run_idle_cases(Run& run) {
  const Storage storage = file_storage(sluice::Synchronous::kNormal);
  for (const IdleState& state : idle_states()) {
    const std::string name = "sluice idle worker: " + std::string(state.name) + " " + storage.name;
    if (!run.wants(name)) continue;
    run.guarded(name, [&] {
      const std::string path = run.scratch().fresh_database("idle", storage);
      run.add(watch_idle(name, path, storage, state,
                         run.settings().quick ? kIdleSpan / 50 : kIdleSpan));
      ScratchDir::remove_database(path);
    });
  }
}

}  // namespace bench
