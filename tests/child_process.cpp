#include "child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>

namespace sluice::testing {
namespace {

// Every child still running, killed by the atexit hook if a test leaves without ending it.
std::mutex& live_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::set<pid_t>& live_pids() {
  static std::set<pid_t> pids;
  return pids;
}

void kill_live_children() {
  std::lock_guard lock(live_mutex());
  for (pid_t pid : live_pids()) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  live_pids().clear();
}

void track(pid_t pid) {
  static std::once_flag registered;
  std::call_once(registered, [] { std::atexit(kill_live_children); });
  std::lock_guard lock(live_mutex());
  live_pids().insert(pid);
}

void untrack(pid_t pid) {
  std::lock_guard lock(live_mutex());
  live_pids().erase(pid);
}

}  // namespace

ChildProcess::ChildProcess(std::vector<std::string> args, std::string log_path,
                           std::vector<std::pair<std::string, std::string>> env) {
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("ChildProcess: fork failed");
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  track(pid_);
}

ChildProcess::~ChildProcess() {
  if (running()) end(SIGKILL);
}

int ChildProcess::end(int signal) {
  if (running()) {
    ::kill(pid_, signal);
    ::waitpid(pid_, &status_, 0);
    untrack(pid_);
  }
  return status_;
}

int ChildProcess::exit_status() {
  int status = 0;
  if (status_ == -1 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
    status_ = status;
    untrack(pid_);
  }
  return status_;
}

bool ChildProcess::running() { return exit_status() == -1; }

}  // namespace sluice::testing
