// The power-box VFS on raw SQLite in forked children of one process group: a cut keeps what a
// sync covered, from whichever process of the box it came, and drops the rest.
#include <SQLiteCpp/Database.h>
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "power_box_vfs.hpp"
#include "temp_dir.hpp"

namespace sluice::torture {
namespace {

// In a child of the box: inserts each row in its own transaction at its synchronous level, and
// returns the connection still open (the last connection to close would checkpoint the WAL).
std::unique_ptr<SQLite::Database> insert_rows(
    const std::string& path, const std::vector<std::pair<int, const char*>>& rows) {
  auto db = std::make_unique<SQLite::Database>(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  db->exec("PRAGMA journal_mode=WAL");
  db->exec("CREATE TABLE IF NOT EXISTS t(n INTEGER)");
  for (const auto& [row, synchronous] : rows) {
    db->exec(std::string("PRAGMA synchronous=") + synchronous);
    db->exec("INSERT INTO t VALUES (" + std::to_string(row) + ")");
  }
  return db;
}

std::set<int> rows(const std::string& path) {
  SQLite::Database db(path, SQLite::OPEN_READONLY);
  CHECK(db.execAndGet("PRAGMA integrity_check").getString() == "ok");
  std::set<int> found;
  SQLite::Statement all(db, "SELECT n FROM t");
  while (all.executeStep()) found.insert(all.getColumn(0).getInt());
  return found;
}

// Forks a child in process group `group` (0: a new one it leads) that runs `body` with the box's
// VFS as its default, keeping the connection it returns open, then cuts the power cleanly (or,
// with `cut` false, reports on `ready_fd` and waits to be killed).
template <typename Body>
pid_t box_child(const std::string& box, pid_t group, bool cut, int ready_fd, Body body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setpgid(0, group);
    try {
      PowerBoxVfs vfs(box, 1);
      const std::unique_ptr<SQLite::Database> open = body();
      if (cut) vfs.cut_now(BoxTear::kClean);
      (void)!::write(ready_fd, "r", 1);
      for (;;) ::pause();
    } catch (...) {
      ::_exit(3);
    }
  }
  ::setpgid(pid, group);
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST_CASE("power box: a clean cut keeps the synced commit and drops the unsynced one") {
  TempDir dir;
  const std::string box = dir.file("box");
  std::filesystem::create_directories(box);
  const std::string path = dir.file("one.db");
  const pid_t child = box_child(box, 0, true, -1, [&] {
    return insert_rows(path, {{1, "FULL"}, {2, "NORMAL"}});
  });
  const int status = wait_for(child);
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
  CHECK(std::filesystem::exists(PowerBoxVfs::cut_marker(box)));
  PowerBoxVfs::reset(box);
  CHECK(rows(path) == std::set<int>{1});
}

// What a FULL claim relies on: fsync flushes the whole file, whoever wrote it. Process A commits
// at NORMAL and lives on; process B commits at FULL and cuts the power of the box (A with it).
TEST_CASE("power box: one process's sync makes another's earlier commit durable") {
  TempDir dir;
  const std::string box = dir.file("box");
  std::filesystem::create_directories(box);
  const std::string path = dir.file("two.db");
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t a = box_child(box, 0, false, ready[1], [&] {
    return insert_rows(path, {{1, "NORMAL"}});
  });
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  const pid_t b = box_child(box, a, true, -1, [&] { return insert_rows(path, {{2, "FULL"}}); });
  CHECK(WIFSIGNALED(wait_for(b)));
  CHECK(WIFSIGNALED(wait_for(a)));
  ::close(ready[0]);
  ::close(ready[1]);
  PowerBoxVfs::reset(box);
  CHECK(rows(path) == std::set<int>{1, 2});
}

// And without the other's sync the NORMAL commit goes: the second test is not trivially true.
TEST_CASE("power box: a NORMAL commit of another process no sync covered is dropped") {
  TempDir dir;
  const std::string box = dir.file("box");
  std::filesystem::create_directories(box);
  const std::string path = dir.file("three.db");
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t a = box_child(box, 0, false, ready[1], [&] {
    return insert_rows(path, {{1, "FULL"}, {2, "NORMAL"}});
  });
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  const pid_t b = box_child(box, a, true, -1, [&] { return insert_rows(path, {}); });
  CHECK(WIFSIGNALED(wait_for(b)));
  CHECK(WIFSIGNALED(wait_for(a)));
  ::close(ready[0]);
  ::close(ready[1]);
  PowerBoxVfs::reset(box);
  CHECK(rows(path) == std::set<int>{1});
}

}  // namespace
}  // namespace sluice::torture
