// A child process for the torture suite: fork+exec, a progress pipe, kill -9, reap.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace sluice::torture {

// Not thread-safe. The child's stdout is a pipe on which it reports progress, one byte per
// step; its stderr is the parent's unless redirected to a file. The destructor kills and reaps a
// child still running.
class ChildProcess {
 public:
  using Env = std::vector<std::pair<std::string, std::string>>;

  // Starts `exe` with `args` and the parent's environment plus `env`. With `stderr_path`, the
  // child's stderr goes to that file (truncated) instead of the parent's. `process_group`: -1
  // stays in the parent's, 0 leads a new one (its id is the child's pid), a pid joins that one.
  ChildProcess(const std::string& exe, const std::vector<std::string>& args, const Env& env = {},
               const std::string& stderr_path = "", pid_t process_group = -1);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }

  // Blocks until the child has reported `steps` progress steps in all. False if it closed its
  // stdout (exited) first, or made no progress for `stall` (a watchdog against a hung child).
  bool wait_progress(long long steps, std::chrono::milliseconds stall = std::chrono::seconds(20));
  long long progress() const { return progress_; }

  // Reads the progress the child has reported so far without waiting; returns the total.
  long long read_progress();

  // SIGKILL, then reaps; returns the wait status.
  int kill9();

  // Reaps the child; returns the wait status. Idempotent.
  int wait();

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  long long progress_ = 0;
  bool reaped_ = false;
  int status_ = 0;
};

// The wait status as words: "exit 0", "signal 9", ...
std::string describe_status(int status);

// The directory of the running executable, to find the child binary built beside it.
std::string executable_dir();

}  // namespace sluice::torture
