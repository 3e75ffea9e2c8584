// The process harness: progress is read from the child's pipe, kill -9 ends it, and a child
// that exits by itself is reaped with its status. The children sleep rather than `cat`: under
// meson test stdin is at EOF, and a `cat` that exits first would race the kill.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <fstream>
#include <string>

#include "child_process.hpp"
#include "temp_dir.hpp"

namespace sluice::torture {
namespace {

TEST_CASE("child process reports progress and dies by kill -9") {
  ChildProcess child("/bin/sh", {"-c", "printf abcde; exec sleep 600"});
  REQUIRE(child.wait_progress(5));
  const int status = child.kill9();
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  CHECK(describe_status(status) == "signal 9");
}

TEST_CASE("child process wait_progress gives up on a child that stalls") {
  ChildProcess child("/bin/sh", {"-c", "printf a; exec sleep 600"});
  CHECK_FALSE(child.wait_progress(2, std::chrono::milliseconds(50)));
  CHECK(child.progress() == 1);
}

TEST_CASE("child process read_progress takes what was reported without waiting for more") {
  ChildProcess child("/bin/sh", {"-c", "printf abc; exec sleep 600"});
  // printf writes its three bytes at once; wait_progress(1) consumes only the first of them.
  REQUIRE(child.wait_progress(1));
  CHECK(child.progress() == 1);
  CHECK(child.read_progress() == 3);
  CHECK(child.read_progress() == 3);
}

TEST_CASE("child process stderr can go to a file") {
  TempDir dir;
  const std::string err = dir.file("stderr.txt");
  ChildProcess child("/bin/sh", {"-c", "echo oops >&2; exit 1"}, {}, err);
  CHECK(describe_status(child.wait()) == "exit 1");
  std::ifstream in(err);
  std::string line;
  CHECK(std::getline(in, line));
  CHECK(line == "oops");
}

TEST_CASE("child process that exits early ends progress and keeps its exit code") {
  ChildProcess child("/bin/sh", {"-c", "printf ab; exit 3"}, {{"UNUSED_TORTURE_VAR", "1"}});
  CHECK_FALSE(child.wait_progress(10));
  CHECK(child.progress() == 2);
  CHECK(describe_status(child.wait()) == "exit 3");
}

}  // namespace
}  // namespace sluice::torture
