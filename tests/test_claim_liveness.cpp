// A live worker's claim is never taken over, wherever it runs: in another PID namespace (two
// containers sharing the file, each app pid 1) or where /proc cannot be read. A dead worker's
// claim is recovered within the claim lease. The worker under test runs in a child process
// (liveness_worker.cpp) that unshare(1) puts in a namespace of its own; that needs root, and
// without it the tests say so and check nothing.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <future>
#include <thread>

#include "support/cli_fixture.hpp"
#include "write_lock_holder.hpp"

using namespace sluice;
using sluice::test::ChildProcess;
using sluice::test::required_env;
using sluice::test::run_process;
using sluice::test::TempDir;
using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

namespace {

// Short, so that an observation window can span several leases.
constexpr milliseconds kLease{600};
// How long observers watch a live claim: long past its lease, so a lease not renewed shows.
constexpr milliseconds kWindow = 4 * kLease;
// Room for 10 poll intervals (an idle worker's longest look-away), process start-up and a loaded
// 2-core machine under sanitizers.
constexpr seconds kSlack{2};

Options lease_options(int max_attempts) {
  Options options;
  options.claim_lease = kLease;
  options.poll_interval = milliseconds(20);
  options.retry.max_attempts = max_attempts;
  options.retry.initial_backoff = milliseconds(0);
  options.retry.max_backoff = milliseconds(0);
  return options;
}

const ConsumerOptions kOutside{.mode = DeliveryMode::kOutsideTransaction};

// `command` as pid 1 of a new PID namespace with its own /proc. It dies with unshare.
std::vector<std::string> in_pid_namespace(std::vector<std::string> command) {
  std::vector<std::string> argv{"/usr/bin/unshare", "--pid", "--fork", "--mount-proc",
                                "--kill-child"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

// `command` in a mount namespace where /proc is an empty tmpfs: no process can be looked up.
std::vector<std::string> without_proc(std::vector<std::string> command) {
  std::vector<std::string> argv{
      "/usr/bin/unshare", "--mount", "sh", "-c", "mount -t tmpfs none /proc && exec \"$@\"", "sh"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

bool namespaces_available() {
  static const bool available = run_process(in_pid_namespace({"true"})).exit_code == 0 &&
                                run_process(without_proc({"true"})).exit_code == 0;
  if (!available) MESSAGE("unshare(1) is not permitted here (needs root): nothing checked");
  return available;
}

std::vector<std::string> holder(const std::string& db, int max_attempts, const std::string& fifo,
                                bool batch = false) {
  std::vector<std::string> argv{
      required_env("SLUICE_LIVENESS_WORKER"), db,     std::to_string(kLease.count()),
      std::to_string(max_attempts),           "hold", fifo};
  if (batch) argv.push_back("batch");
  return argv;
}

std::vector<std::string> drainer(const std::string& db, int max_attempts) {
  return {required_env("SLUICE_LIVENESS_WORKER"), db,      std::to_string(kLease.count()),
          std::to_string(max_attempts),           "drain", std::to_string(kWindow.count())};
}

long long calls_in(const std::string& output) {
  long long calls = 0;
  for (std::size_t at = output.find("called "); at != std::string::npos;
       at = output.find("called ", at + 1)) {
    ++calls;
  }
  return calls;
}

// Lets a holder's handler return.
void release(const std::string& fifo) {
  const int fd = open(fifo.c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  close(fd);
}

template <typename Condition>
bool eventually(Condition condition, SteadyClock::duration timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  while (!condition()) {
    if (SteadyClock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

// The file, the consumer and one event, and an observer worker in this process that counts its
// handler calls.
struct Setup {
  explicit Setup(int max_attempts)
      : options(lease_options(max_attempts)),
        path(dir.file("app.db")),
        fifo(dir.file("release")),
        db(open_database(path, options)),
        observer(path, options) {
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    observer.subscribe(
        "c", "t", [this](const Event&, Context&) { ++observer_calls; }, kOutside);
    event_id = Outbox(db, options).enqueue_now({.topic = "t"}).id;
  }

  ConsumerStats stats() { return consumer_stats(db, options).at(0); }

  // Waits for the event to be delivered, and checks that it took no retry.
  void check_delivered_without_retry() {
    REQUIRE(eventually([&] { return stats().delivered_total == 1; }, seconds(30)));
    CHECK(stats().retries_total == 0);
    CHECK(list_dead_letters(db, {}).empty());
  }

  TempDir dir;
  Options options;
  std::string path;
  std::string fifo;
  SQLite::Database db;
  Worker observer;
  std::atomic<int> observer_calls{0};
  std::string event_id;
};

}  // namespace

TEST_CASE("a live worker's claim is not taken over from another PID namespace, past its lease") {
  if (!namespaces_available()) return;
  // One attempt: a claim taken over from its live owner would be dead-lettered as crashed.
  Setup s(1);
  bool batch = false;
  SUBCASE("a handler on the worker's thread") {}
  SUBCASE("a batch handler on the helper thread") { batch = true; }
  ChildProcess owner(in_pid_namespace(holder(s.path, 1, s.fifo, batch)));
  REQUIRE(owner.wait_for_output(ChildProcess::Stream::kOut, "called " + s.event_id, seconds(30)));

  // Watched from this process and from the pid 1 of a third namespace, for several leases.
  ChildProcess other(in_pid_namespace(drainer(s.path, 1)));
  s.observer.start();
  REQUIRE(other.wait_for_output(ChildProcess::Stream::kOut, "done", kWindow + seconds(30)));
  s.observer.stop();
  CHECK(calls_in(other.out()) == 0);
  CHECK(s.observer_calls == 0);
  CHECK(s.stats().retries_total == 0);
  CHECK(s.stats().claimed == 1);

  release(s.fifo);
  s.check_delivered_without_retry();
  CHECK(calls_in(owner.out()) == 1);
}

TEST_CASE("a worker that cannot read /proc keeps its claim while it lives") {
  if (!namespaces_available()) return;
  Setup s(1);
  ChildProcess owner(without_proc(holder(s.path, 1, s.fifo)));
  REQUIRE(owner.wait_for_output(ChildProcess::Stream::kOut, "called " + s.event_id, seconds(30)));
  s.observer.start();
  // The observation window: nothing may happen in it.
  std::this_thread::sleep_for(kWindow);
  s.observer.stop();
  CHECK(s.observer_calls == 0);
  CHECK(s.stats().retries_total == 0);

  release(s.fifo);
  s.check_delivered_without_retry();
  CHECK(calls_in(owner.out()) == 1);
}

TEST_CASE("a worker that cannot read /proc takes no live worker's claim") {
  if (!namespaces_available()) return;
  Setup s(1);
  std::promise<void> called;
  std::promise<void> released;
  std::shared_future<void> release_seen = released.get_future().share();
  Worker owner(s.path, s.options);
  owner.subscribe(
      "c", "t",
      [&](const Event&, Context&) {
        called.set_value();
        release_seen.wait();
      },
      kOutside);
  // Lets the handler return, so that the worker can stop, also when a REQUIRE fails.
  struct Releaser {
    std::promise<void>& released;
    ~Releaser() {
      try {
        released.set_value();
      } catch (const std::future_error&) {
      }
    }
  } releaser{released};
  owner.start();
  REQUIRE(called.get_future().wait_for(seconds(30)) == std::future_status::ready);

  ChildProcess blind(without_proc(drainer(s.path, 1)));
  REQUIRE(blind.wait_for_output(ChildProcess::Stream::kOut, "done", kWindow + seconds(30)));
  CHECK(calls_in(blind.out()) == 0);
  CHECK(s.stats().retries_total == 0);

  released.set_value();
  s.check_delivered_without_retry();
}

TEST_CASE("a dead worker's claim is recovered within the claim lease, wherever it ran") {
  if (!namespaces_available()) return;
  Setup s(2);
  bool namespaced = false;
  SUBCASE("in another PID namespace") { namespaced = true; }
  SUBCASE("without /proc") {}
  const auto command = holder(s.path, 2, s.fifo);
  ChildProcess owner(namespaced ? in_pid_namespace(command) : without_proc(command));
  REQUIRE(owner.wait_for_output(ChildProcess::Stream::kOut, "called " + s.event_id, seconds(30)));
  s.observer.start();
  owner.signal(SIGKILL);
  const auto killed = SteadyClock::now();
  REQUIRE(eventually([&] { return s.observer_calls > 0; }, kLease + seconds(30)));
  const auto recovered = SteadyClock::now() - killed;
  MESSAGE("recovered " << std::chrono::duration_cast<milliseconds>(recovered).count()
                       << " ms after the kill (lease " << kLease.count() << " ms)");
  CHECK(recovered < kLease + kSlack);
  REQUIRE(eventually([&] { return s.stats().delivered_total == 1; }, seconds(30)));
  s.observer.stop();
  CHECK(s.observer_calls == 1);
  CHECK(s.stats().retries_total == 1);
  CHECK(list_dead_letters(s.db, {}).empty());
}

TEST_CASE("a live worker's claim is not taken over while another connection holds the write lock") {
  if (!namespaces_available()) return;
  // One attempt: a claim taken over from its live owner would be dead-lettered as crashed.
  Setup s(1);
  ChildProcess owner(in_pid_namespace(holder(s.path, 1, s.fifo)));
  REQUIRE(owner.wait_for_output(ChildProcess::Stream::kOut, "called " + s.event_id, seconds(30)));
  s.observer.start();
  {
    // A bulk import or a VACUUM: the write lock held for several leases. No lease is renewed
    // through it, and none needs to be.
    sluice::testing::WriteLockHolder lock(s.path, s.dir.file("lock-holder.log"));
    std::this_thread::sleep_for(kWindow);  // the observation window
  }
  // Once the lock is free, the observer is first to take it: it must still not take over.
  CHECK_FALSE(eventually([&] { return s.observer_calls > 0; }, 2 * kLease));
  s.observer.stop();
  CHECK(s.observer_calls == 0);
  CHECK(s.stats().retries_total == 0);

  release(s.fifo);
  s.check_delivered_without_retry();
  CHECK(calls_in(owner.out()) == 1);
}

// Where the kernel lock cannot be had (here: a directory where the lock file would be), liveness
// falls back to the lease, and a worker stalled past it (SIGSTOP: a suspended laptop, a debugger)
// has its claim recovered by a worker that cannot look it up. Resumed, it must commit nothing for
// the claim it lost, and what it claims afterwards must be a claim of its own: killed in the
// middle of it, none of those events may be lost.
TEST_CASE("a worker stalled past its lease and resumed commits nothing and loses nothing") {
  if (!namespaces_available()) return;
  Setup s(5);
  REQUIRE(mkdir((s.path + "-sluice-lock").c_str(), 0700) == 0);
  ChildProcess owner(without_proc(holder(s.path, 5, s.fifo)));
  REQUIRE(owner.wait_for_output(ChildProcess::Stream::kOut, "called " + s.event_id, seconds(30)));
  owner.signal(SIGSTOP);
  s.observer.start();
  REQUIRE(eventually([&] { return s.stats().delivered_total == 1; }, kLease + seconds(30)));
  s.observer.stop();
  CHECK(s.observer_calls == 1);  // the recovered event, retried once

  Outbox outbox(s.db, s.options);
  const std::string e2 = outbox.enqueue_now({.topic = "t"}).id;
  const std::string e3 = outbox.enqueue_now({.topic = "t"}).id;
  owner.signal(SIGCONT);
  release(s.fifo);  // its handler of the first event returns: that outcome is not committed
  REQUIRE(owner.wait_for_output(ChildProcess::Stream::kOut, "called " + e2, seconds(30)));
  owner.signal(SIGKILL);
  owner.wait(seconds(30));

  s.observer.start();
  REQUIRE(eventually([&] { return s.stats().delivered_total == 3; }, kLease + seconds(30)));
  s.observer.stop();
  CHECK(s.observer_calls == 3);
  const ConsumerStats stats = s.stats();
  CHECK(stats.pending == 0);
  CHECK(stats.claimed == 0);
  CHECK(list_dead_letters(s.db, {}).empty());
}
