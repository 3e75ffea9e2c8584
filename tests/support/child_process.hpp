// Runs programs (the sluice CLI, a test worker) as child processes and captures their output.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sluice::test {

// Environment changes for a child: a value sets the variable, nullopt removes it.
using EnvChanges = std::map<std::string, std::optional<std::string>>;

struct ProcessResult {
  // The exit status, or 128 + the signal that ended the process.
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `argv` to completion with `input` on its standard input.
ProcessResult run_process(const std::vector<std::string>& argv, const EnvChanges& env = {},
                          const std::string& input = {});

// Runs `argv` to completion on a pseudo-terminal (stdout and stderr both go to it) and returns
// what it printed there.
ProcessResult run_in_terminal(const std::vector<std::string>& argv, const EnvChanges& env = {});

// Not thread-safe. A child running in the background. The destructor kills it (SIGKILL) and
// reaps it if it is still running, so a failing test never leaves one behind.
class ChildProcess {
 public:
  enum class Stream { kOut, kErr };

  ChildProcess(const std::vector<std::string>& argv, const EnvChanges& env = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Reads output until `stream` holds `needle` (true) or `timeout` passes (false).
  bool wait_for_output(Stream stream, const std::string& needle, std::chrono::milliseconds timeout);
  // Reads output until `stream` holds `lines` complete lines, or `timeout` passes.
  bool wait_for_lines(Stream stream, std::size_t lines, std::chrono::milliseconds timeout);
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

  void signal(int signal_number);
  // Waits for the child to exit, reading its output; returns the exit code, or nullopt if it
  // is still running after `timeout`.
  std::optional<int> wait(std::chrono::milliseconds timeout);

 private:
  // Reads what is available, waiting at most `timeout`. Returns false once both streams closed.
  bool read_some(std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_;
  std::string err_;
  std::optional<int> exit_code_;
};

}  // namespace sluice::test
