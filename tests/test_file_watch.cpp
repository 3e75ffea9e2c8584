// The kernel wakes an idle worker: the file watch reports every way a commit can show in the
// directory (the WAL written, truncated by a checkpoint, deleted and re-created, the file
// replaced, events lost to an overflowing queue), and a commit in another process is delivered
// long before the worker's poll interval.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <vector>

#include "file_watch.hpp"
#include "sluice/database.hpp"
#include "sluice/outbox.hpp"
#include "sluice/worker.hpp"
#include "support/temp_dir.hpp"

using namespace sluice;
using sluice::test::TempDir;

namespace {

constexpr auto kNoWait = std::chrono::steady_clock::duration::zero();

void append(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::app) << bytes;
}

std::string created(const std::string& path) {
  append(path, "x");
  return path;
}

// A database file of a few bytes in a directory of its own, and a watch on it.
struct WatchedFile {
  TempDir dir;
  const std::string db = created(dir.file("app.db"));
  FileWatch watch{db};
};

// A second process that runs `act` once the test writes to its pipe. Forked before the test
// opens the file or starts a thread, so the child shares neither SQLite's state nor a lock.
class OtherProcess {
 public:
  explicit OtherProcess(const std::function<void()>& act) {
    REQUIRE(pipe(go_) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      close(go_[1]);
      char byte = 0;
      int status = 1;
      if (read(go_[0], &byte, 1) == 1) {
        try {
          act();
          status = 0;
        } catch (...) {
        }
      }
      _exit(status);
    }
    close(go_[0]);
  }
  ~OtherProcess() {
    close(go_[1]);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }

  // Lets the child act and returns its exit status.
  int act_and_wait() {
    const char byte = 1;
    REQUIRE(write(go_[1], &byte, 1) == 1);
    int status = 0;
    REQUIRE(waitpid(pid_, &status, 0) == pid_);
    pid_ = -1;
    return status;
  }

 private:
  int go_[2] = {-1, -1};
  pid_t pid_ = -1;
};

// Counts the events a started worker delivers.
struct Deliveries {
  std::mutex mutex;
  std::condition_variable changed;
  int count = 0;

  void add() {
    {
      std::lock_guard lock(mutex);
      ++count;
    }
    changed.notify_all();
  }
  bool wait_for(int n, std::chrono::seconds timeout) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, timeout, [&] { return count >= n; });
  }
};

void enqueue_in(const std::string& path, const std::string& payload) {
  SQLite::Database db = open_database(path);
  Outbox outbox(db);
  NewEvent event;
  event.topic = "t";
  event.payload = payload;
  outbox.enqueue_now(event);
}

// A worker whose poll interval (a minute) no test waits out: only a wake delivers in time.
// `before` runs in another process just ahead of its enqueue.
void check_other_process_wakes_worker(const std::function<void(const std::string&)>& before) {
  TempDir dir;
  const std::string path = dir.file("app.db");
  OtherProcess other([&] {
    before(path);
    enqueue_in(path, "2");
  });
  Options options;
  options.poll_interval = std::chrono::seconds(60);
  Deliveries deliveries;
  Worker worker(path, options);
  worker.subscribe("c", "t", [&](const Event&, Context&) { deliveries.add(); });
  enqueue_in(path, "1");
  worker.start();
  REQUIRE(deliveries.wait_for(1, std::chrono::seconds(10)));
  CHECK(other.act_and_wait() == 0);
  CHECK(deliveries.wait_for(2, std::chrono::seconds(10)));
  worker.stop();
}

// The event masks of this process's inotify watches, as the kernel reports them in
// /proc/self/fdinfo: what it will queue an event for on every write.
std::vector<unsigned> inotify_masks() {
  std::vector<unsigned> masks;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fdinfo")) {
    std::ifstream info(entry.path());
    for (std::string line; std::getline(info, line);) {
      if (line.rfind("inotify wd:", 0) != 0) continue;
      const auto at = line.find(" mask:");
      if (at != std::string::npos) masks.push_back(std::stoul(line.substr(at + 6), nullptr, 16));
    }
  }
  return masks;
}

// Whether a handler running now would make the kernel queue an event for each of its writes.
bool writes_raise_events() {
  for (const unsigned mask : inotify_masks()) {
    if ((mask & IN_MODIFY) != 0) return true;
  }
  return false;
}

}  // namespace

TEST_CASE_FIXTURE(WatchedFile, "a muted file watch reports no write until it listens again") {
  REQUIRE(watch.available());
  REQUIRE(writes_raise_events());
  watch.mute();
  CHECK_FALSE(writes_raise_events());
  append(db + "-wal", "x");
  CHECK_FALSE(watch.wait(kNoWait));
  CHECK(watch.listen());  // it was muted: a write may have gone unreported
  CHECK_FALSE(watch.listen());
  append(db + "-wal", "x");
  CHECK(watch.wait(kNoWait));
  CHECK(watch.available());
}

TEST_CASE("a muted file watch stops when its directory goes away") {
  TempDir dir;
  std::filesystem::create_directory(dir.path() / "sub");
  FileWatch watch((dir.path() / "sub" / "app.db").string());
  REQUIRE(watch.available());
  watch.mute();
  std::filesystem::remove_all(dir.path() / "sub");
  CHECK(watch.wait(kNoWait));
  CHECK_FALSE(watch.available());
  CHECK_FALSE(watch.listen());  // nothing to listen with: the caller polls
  CHECK_FALSE(watch.available());
}

// A busy worker needs no wake: an event queued for each of its own WAL writes (about as many
// as the events it delivers) cost the kernel as much again as the write itself here, and a
// draining worker 10-15% of its speed.
TEST_CASE("a worker delivering a backlog has the kernel report none of its writes") {
  TempDir dir;
  const std::string path = dir.file("app.db");
  Worker worker(path);
  Deliveries deliveries;
  int reported = 0;
  worker.subscribe("c", "t", [&](const Event&, Context&) {
    reported += writes_raise_events() ? 1 : 0;
    deliveries.add();
  });
  for (int i = 0; i < 3; ++i) enqueue_in(path, std::to_string(i));
  SUBCASE("run_until_idle") { CHECK(worker.run_until_idle().delivered == 3); }
  SUBCASE("start") {
    worker.start();
    REQUIRE(deliveries.wait_for(3, std::chrono::seconds(10)));
    worker.stop();
  }
  CHECK(reported == 0);
}

TEST_CASE_FIXTURE(WatchedFile,
                  "a file watch reports writes to the database and its WAL, not to other files") {
  REQUIRE(watch.available());
  CHECK_FALSE(watch.wait(kNoWait));
  append(dir.file("other.db-wal"), "x");
  append(dir.file("app.db-shm"), "x");
  CHECK_FALSE(watch.wait(kNoWait));
  append(db + "-wal", "x");
  CHECK(watch.wait(kNoWait));
  CHECK_FALSE(watch.wait(kNoWait));  // each event wakes once
  append(db, "x");
  CHECK(watch.wait(kNoWait));
}

TEST_CASE("a file watch reports the WAL truncated by a checkpoint, deleted and re-created") {
  TempDir dir;
  const std::string path = dir.file("app.db");
  SQLite::Database db = open_database(path);
  db.exec("CREATE TABLE t(x)");
  db.exec("INSERT INTO t VALUES (1)");
  FileWatch watch(path);
  REQUIRE(watch.available());
  (void)watch.wait(kNoWait);  // what came before
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  CHECK(watch.wait(kNoWait));
  std::filesystem::copy_file(path + "-wal", dir.file("saved-wal"));
  (void)watch.wait(kNoWait);  // what came before
  std::filesystem::remove(path + "-wal");
  CHECK(watch.wait(kNoWait));
  std::filesystem::copy_file(dir.file("saved-wal"), path + "-wal");
  CHECK(watch.wait(kNoWait));
}

TEST_CASE_FIXTURE(WatchedFile, "a file watch reports the database replaced by a rename") {
  REQUIRE(watch.available());
  append(dir.file("app.db.new"), "new");
  (void)watch.wait(kNoWait);  // what came before
  std::filesystem::rename(dir.file("app.db.new"), db);
  CHECK(watch.wait(kNoWait));
}

TEST_CASE_FIXTURE(WatchedFile, "a file watch whose event queue overflowed reports a change") {
  REQUIRE(watch.available());
  // Writes to two other files in turn: no two events in a row are alike, so none merge, and
  // more are queued than the kernel keeps (/proc/sys/fs/inotify/max_queued_events).
  long long limit = 16384;
  std::ifstream("/proc/sys/fs/inotify/max_queued_events") >> limit;
  const int a = open(dir.file("a").c_str(), O_CREAT | O_WRONLY, 0600);
  const int b = open(dir.file("b").c_str(), O_CREAT | O_WRONLY, 0600);
  REQUIRE((a >= 0 && b >= 0));
  long long written = 0;
  for (long long i = 0; i <= limit; ++i) written += write(i % 2 == 0 ? a : b, "x", 1);
  REQUIRE(written == limit + 1);
  close(a);
  close(b);
  CHECK(watch.wait(kNoWait));
  CHECK_FALSE(watch.wait(kNoWait));
}

TEST_CASE("a file watch ends a wait when interrupted, and stops when its directory goes away") {
  TempDir dir;
  const std::string db = (dir.path() / "sub" / "app.db").string();
  std::filesystem::create_directory(dir.path() / "sub");
  FileWatch watch(db);
  REQUIRE(watch.available());
  watch.interrupt();
  CHECK_FALSE(watch.wait(std::chrono::hours(1)));
  std::filesystem::remove_all(dir.path() / "sub");
  CHECK(watch.wait(kNoWait));  // a change: the caller looks once more, then polls
  CHECK_FALSE(watch.available());
}

TEST_CASE("a commit in another process wakes an idle worker long before its poll interval") {
  check_other_process_wakes_worker([](const std::string&) {});
}

TEST_CASE("a commit after a checkpoint truncated the WAL wakes an idle worker") {
  check_other_process_wakes_worker([](const std::string& path) {
    SQLite::Database db = open_database(path);
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  });
}
