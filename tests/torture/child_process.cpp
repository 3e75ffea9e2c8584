#include "child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace sluice::torture {

ChildProcess::ChildProcess(const std::string& exe, const std::vector<std::string>& args,
                           const Env& env, const std::string& stderr_path, pid_t process_group) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("ChildProcess: pipe failed: ") + std::strerror(errno));
  }
  std::vector<std::string> argv_text{exe};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_ = ::fork();
  if (pid_ < 0) {
    throw std::runtime_error(std::string("ChildProcess: fork failed: ") + std::strerror(errno));
  }
  if (pid_ == 0) {
    if (process_group >= 0) ::setpgid(0, process_group);
    ::dup2(fds[1], STDOUT_FILENO);
    if (!stderr_path.empty()) {
      const int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (err < 0) ::_exit(126);
      ::dup2(err, STDERR_FILENO);
    }
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  // Also from the parent, so the group exists before the constructor returns, whichever of the
  // two runs first.
  if (process_group >= 0) ::setpgid(pid_, process_group);
  ::close(fds[1]);
  out_fd_ = fds[0];
}

ChildProcess::~ChildProcess() {
  if (!reaped_) kill9();
  if (out_fd_ >= 0) ::close(out_fd_);
}

bool ChildProcess::wait_progress(long long steps, std::chrono::milliseconds stall) {
  char buf[256];
  while (progress_ < steps) {
    pollfd readable{out_fd_, POLLIN, 0};
    const int ready = ::poll(&readable, 1, static_cast<int>(stall.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    const long long want = std::min<long long>(steps - progress_, sizeof buf);
    const ssize_t n = ::read(out_fd_, buf, static_cast<std::size_t>(want));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    progress_ += n;
  }
  return true;
}

long long ChildProcess::read_progress() {
  char buf[4096];
  for (;;) {
    pollfd readable{out_fd_, POLLIN, 0};
    const int ready = ::poll(&readable, 1, 0);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    const ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    progress_ += n;
  }
  return progress_;
}

int ChildProcess::kill9() {
  if (!reaped_) ::kill(pid_, SIGKILL);
  return wait();
}

int ChildProcess::wait() {
  if (reaped_) return status_;
  // Read to EOF first: a child blocked on a full pipe would never exit.
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    progress_ += n;
  }
  while (::waitpid(pid_, &status_, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error("ChildProcess: waitpid failed");
  }
  reaped_ = true;
  return status_;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

std::string executable_dir() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
}

}  // namespace sluice::torture
