// A process that dies during delivery: its claim counts as a crashed attempt, suspects are retried
// in halves until the crashing one is alone, and a poison event that kills the process reaches
// the dead letters.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::count_attempts;
using sluice::test::Fixture;
using sluice::test::recording;

namespace {

Options fast_retry(Options options) {
  options.retry.initial_backoff = std::chrono::milliseconds(0);
  options.retry.max_backoff = std::chrono::milliseconds(0);
  options.batch_size = 10;
  return options;
}

constexpr const char* kPoison = R"({"poison":true})";

// Consumer "c" records each event in the app table, then aborts the process on the poison one.
void subscribe_record_or_abort(Worker& worker) {
  worker.subscribe("c", "t", [](const Event& e, Context& ctx) {
    recording("c")(e, ctx);
    if (e.payload == kPoison) std::abort();
  });
}

// Runs a worker in a child process, with its handlers registered by `subscribe`, until idle.
// Returns true if the child died of an abort.
bool child_crashed(const std::string& path, const Options& options,
                   const std::function<void(Worker&)>& subscribe) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    signal(SIGABRT, SIG_DFL);  // die of the abort, without the test runner's report
    try {
      Worker worker(path, options);
      subscribe(worker);
      worker.run_until_idle();
      _exit(0);
    } catch (...) {
      _exit(3);
    }
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE((WIFSIGNALED(status) || WEXITSTATUS(status) == 0));
  return WIFSIGNALED(status);
}

// Registers consumer "c" with `subscribe` and publishes `events` events to "t", the one at
// `poison` with the poison payload. Then runs child workers until one drains without crashing
// and returns how many crashed (at most `most`).
int crashes_until_drained(Fixture& f, const Options& options, int events, int poison, int most,
                          const std::function<void(Worker&)>& subscribe) {
  const std::string path = f.dir.file("app.db");
  {
    Worker registrar(path, options);
    subscribe(registrar);
  }
  for (int i = 0; i < events; ++i) f.publish("t", i == poison ? kPoison : "{}");
  int crashes = 0;
  while (child_crashed(path, options, subscribe)) {
    ++crashes;
    REQUIRE(crashes <= most);
  }
  return crashes;
}

}  // namespace

TEST_CASE("a poison event that kills the process is dead-lettered as crashed after max attempts") {
  Fixture f(true);
  const Options options = fast_retry(f.options);
  const int crashes = crashes_until_drained(f, options, 10, 4, options.retry.max_attempts,
                                            subscribe_record_or_abort);
  CHECK(crashes == options.retry.max_attempts);
  const auto letters = list_dead_letters(f.db, {});
  REQUIRE(letters.size() == 1);
  CHECK(letters[0].reason == "crashed");
  CHECK(letters[0].attempts == options.retry.max_attempts);
  CHECK(count(f.db, "applied") == 9);
  CHECK(count(f.db, "applied", "event_id = '" + letters[0].event_id + "'") == 0);
  CHECK(count(f.db, "sluice_claims") == 0);
}

TEST_CASE("a poison among n crash suspects costs O(log n) crashes' worth of batches") {
  // A relay-like consumer: a batch handler that takes the whole claim in one call.
  Fixture f(true);
  Options options = fast_retry(f.options);
  options.batch_size = 128;
  options.retry.max_attempts = 10;
  const std::string calls_path = f.dir.file("batch-calls");
  const auto subscribe = [&calls_path](Worker& worker) {
    worker.subscribe_batch("c", "t",
                           [&calls_path](const std::vector<Event>& events) {
                             std::ofstream(calls_path, std::ios::app) << events.size() << std::endl;
                             for (const Event& e : events) {
                               if (e.payload == kPoison) std::abort();
                             }
                             return std::vector<Outcome>(events.size(), Outcome::done());
                           },
                           {.mode = DeliveryMode::kOutsideTransaction});
  };
  constexpr int kEvents = 64;  // log2: 6
  const int crashes =
      crashes_until_drained(f, options, kEvents, 41, options.retry.max_attempts, subscribe);
  std::ifstream calls_file(calls_path);
  int batches = 0;
  for (std::string line; std::getline(calls_file, line);) ++batches;
  MESSAGE(batches << " batch handler calls, " << crashes << " crashes");
  // Halving: a crashed batch and its sibling per level, and the poison's own attempts alone.
  CHECK(batches <= 2 * 6 + options.retry.max_attempts);
  CHECK(crashes == options.retry.max_attempts);
  const auto letters = list_dead_letters(f.db, {});
  REQUIRE(letters.size() == 1);
  CHECK(letters[0].reason == "crashed");
  CHECK(letters[0].attempts == options.retry.max_attempts);
  CHECK(consumer_stats(f.db, options)[0].delivered_total == kEvents - 1);
}

TEST_CASE(
    "an innocent event is not dead-lettered for sharing a crashed batch at its last attempt") {
  Fixture f(true);
  Options options = fast_retry(f.options);
  options.retry.max_attempts = 1;
  const int crashes = crashes_until_drained(f, options, 10, 4, 2, subscribe_record_or_abort);
  // Its one attempt crashed in company, so each event is tried alone once more.
  CHECK(crashes == 2);
  const auto letters = list_dead_letters(f.db, {});
  REQUIRE(letters.size() == 1);
  CHECK(letters[0].reason == "crashed");
  CHECK(count(f.db, "applied", "event_id = '" + letters[0].event_id + "'") == 0);
  CHECK(count(f.db, "applied", "event_id <> '" + letters[0].event_id + "'") == 9);
}

namespace {

// Keeps the messages of the log records it receives.
class RecordingSink final : public LogSink {
 public:
  void write(LogLevel, const std::string& message, const LogFields& fields) override {
    std::lock_guard lock(mutex_);
    records_.emplace_back(message, fields);
  }
  std::vector<std::pair<std::string, LogFields>> records() {
    std::lock_guard lock(mutex_);
    return records_;
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<std::string, LogFields>> records_;
};

// Leaves a claim of `events` fresh events by a process that no longer exists.
void abandon_claim(SQLite::Database& db, int events) {
  const std::string n = std::to_string(events);
  db.exec(
      "INSERT INTO sluice_claims (consumer_id, owner, pid, from_seq, to_seq, lease_until, "
      "created_at) SELECT id, '999999999:1:dead', 999999999, cursor, cursor + " +
      n + ", 0, 0 FROM sluice_consumers");
  db.exec("UPDATE sluice_consumers SET cursor = cursor + " + n);
}

}  // namespace

TEST_CASE("one log line per recovered claim, with its count") {
  Fixture f(true);
  Options options = fast_retry(f.options);
  options.batch_size = 100;
  auto sink = std::make_shared<RecordingSink>();
  options.log = sink;
  Worker worker(f.dir.file("app.db"), options);
  worker.subscribe("c", "t", recording("c"));
  for (int i = 0; i < 100; ++i) f.publish("t");
  abandon_claim(f.db, 100);
  CHECK(worker.run_until_idle().delivered == 100);
  std::vector<LogFields> crash_lines;
  for (const auto& [message, fields] : sink->records()) {
    if (message.find("crash") != std::string::npos) crash_lines.push_back(fields);
  }
  REQUIRE(crash_lines.size() == 1);
  CHECK(crash_lines[0]["events"] == "100");
  CHECK(crash_lines[0]["consumer"] == "c");
  CHECK(count_attempts(f.db, "crashed") == 100);
}

TEST_CASE("an abandoned claim counts as a crashed attempt and its events are delivered after") {
  Fixture f(true);
  const Options options = fast_retry(f.options);
  const std::string path = f.dir.file("app.db");
  Worker worker(path, options);
  worker.subscribe("c", "t", recording("c"));
  for (int i = 0; i < 3; ++i) f.publish("t");
  abandon_claim(f.db, 3);
  const DrainResult result = worker.run_until_idle();
  CHECK(result.delivered == 3);
  CHECK(count(f.db, "applied") == 3);
  CHECK(count_attempts(f.db, "crashed") == 3);
  CHECK(count(f.db, "sluice_claims") == 0);
  CHECK(consumer_stats(f.db, options)[0].retries_total == 3);
}

namespace {

// The owner string sluice wrote for a process before it recorded boot and PID namespace:
// "pid:start time:token".
std::string owner_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22; ++i) fields >> field;
  return std::to_string(pid) + ":" + field + ":token";
}

}  // namespace

TEST_CASE("a claim of a live process is never taken over, even long past its lease") {
  Fixture f(true);
  const std::string path = f.dir.file("app.db");
  Worker worker(path, fast_retry(f.options));
  worker.subscribe("c", "t", recording("c"), {.ordered = true});
  f.publish("t", "{}", "k");
  int gate[2];
  REQUIRE(pipe(gate) == 0);
  const pid_t holder = fork();
  REQUIRE(holder >= 0);
  if (holder == 0) {
    close(gate[1]);
    char byte;
    (void)!read(gate[0], &byte, 1);  // alive until the parent closes the pipe
    _exit(0);
  }
  close(gate[0]);
  f.db.exec(
      "INSERT INTO sluice_claims (consumer_id, owner, pid, from_seq, to_seq, lease_until, "
      "created_at) SELECT id, '" +
      owner_of(holder) + "', " + std::to_string(holder) +
      ", cursor, cursor + 1, 0, 0 FROM sluice_consumers");
  f.db.exec("UPDATE sluice_consumers SET cursor = cursor + 1");
  f.clock->advance(std::chrono::hours(1));
  CHECK(worker.run_until_idle().delivered == 0);
  CHECK(count_attempts(f.db, "crashed") == 0);
  CHECK(count(f.db, "sluice_claims") == 1);

  close(gate[1]);
  int status = 0;
  REQUIRE(waitpid(holder, &status, 0) == holder);
  CHECK(worker.run_until_idle().delivered == 1);
  CHECK(count_attempts(f.db, "crashed") == 1);
  CHECK(count(f.db, "applied") == 1);
}

namespace {

std::string this_boot() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string boot;
  std::getline(in, boot);
  return boot;
}

// Leaves a claim of one fresh event by `owner`, leased until `lease_until`.
void claim_one(Fixture& f, const std::string& owner, TimePoint lease_until) {
  f.db.exec(
      "INSERT INTO sluice_claims (consumer_id, owner, pid, from_seq, to_seq, lease_until, "
      "created_at) SELECT id, '" +
      owner + "', 1, cursor, cursor + 1, " +
      std::to_string(lease_until.time_since_epoch().count()) + ", 0 FROM sluice_consumers");
  f.db.exec("UPDATE sluice_consumers SET cursor = cursor + 1");
}

}  // namespace

TEST_CASE("a claim whose owner cannot be looked up from here is taken over only past its lease") {
  Fixture f(true);
  Worker worker(f.dir.file("app.db"), fast_retry(f.options));
  worker.subscribe("c", "t", recording("c"));
  f.publish("t");
  // pid 1 of another PID namespace on this boot: another container's app.
  claim_one(f, "1:42:token:" + this_boot() + ":1", f.clock->now() + std::chrono::minutes(1));
  f.clock->advance(std::chrono::seconds(59));
  CHECK(worker.run_until_idle().delivered == 0);
  CHECK(count_attempts(f.db, "crashed") == 0);
  f.clock->advance(std::chrono::seconds(2));
  CHECK(worker.run_until_idle().delivered == 1);
  CHECK(count_attempts(f.db, "crashed") == 1);
}

TEST_CASE("a claim made before the last boot is taken over at once, lease or not") {
  Fixture f(true);
  Worker worker(f.dir.file("app.db"), fast_retry(f.options));
  worker.subscribe("c", "t", recording("c"));
  f.publish("t");
  claim_one(f, "1:42:token:00000000-0000-0000-0000-000000000000:1",
            f.clock->now() + std::chrono::hours(1));
  CHECK(worker.run_until_idle().delivered == 1);
  CHECK(count_attempts(f.db, "crashed") == 1);
}
