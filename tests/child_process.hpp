// Test support: a child process started by the test and ended by PID, also when the test fails
// or the test process dies.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace sluice::testing {

// Not thread-safe. The child gets SIGKILL when the test process dies (PR_SET_PDEATHSIG) and is
// killed at exit or on destruction if still running.
class ChildProcess {
 public:
  // Starts `args` (args[0] looked up in PATH) with `env` added to the environment and its
  // output appended to `log_path`.
  ChildProcess(std::vector<std::string> args, std::string log_path,
               std::vector<std::pair<std::string, std::string>> env = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Sends `signal` and waits for the exit; returns the wait status.
  int end(int signal);
  // The wait status if it has exited, without waiting; -1 while running.
  int exit_status();
  bool running();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int status_ = -1;
};

}  // namespace sluice::testing
