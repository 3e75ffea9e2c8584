#include "child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace sluice::test {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> child_environment(const EnvChanges& changes) {
  std::map<std::string, std::string> vars;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const auto equals = text.find('=');
    if (equals != std::string::npos) vars[text.substr(0, equals)] = text.substr(equals + 1);
  }
  for (const auto& [name, value] : changes) {
    if (value) {
      vars[name] = *value;
    } else {
      vars.erase(name);
    }
  }
  std::vector<std::string> env;
  for (const auto& [name, value] : vars) env.push_back(name + "=" + value);
  return env;
}

// Only async-signal-safe calls between fork and exec: the vectors are built before the fork.
[[noreturn]] void exec_child(std::vector<char*>& argv, std::vector<char*>& envp) {
  execve(argv[0], argv.data(), envp.data());
  const char message[] = "exec failed\n";
  [[maybe_unused]] auto ignored = write(STDERR_FILENO, message, sizeof message - 1);
  _exit(127);
}

struct ExecArgs {
  std::vector<std::string> env_strings;
  std::vector<char*> argv;
  std::vector<char*> envp;
  ExecArgs(const std::vector<std::string>& args, const EnvChanges& changes)
      : env_strings(child_environment(changes)) {
    for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    for (auto& var : env_strings) envp.push_back(var.data());
    envp.push_back(nullptr);
  }
};

void make_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
}

int decode_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const EnvChanges& env,
                          const std::string& input) {
  ExecArgs args(argv, env);
  int in[2], out[2], err[2];
  make_pipe(in);
  make_pipe(out);
  make_pipe(err);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    exec_child(args.argv, args.envp);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  // Inputs in these tests are small: they fit the pipe buffer, so writing first cannot block.
  if (!input.empty()) [[maybe_unused]]
    auto written = write(in[1], input.data(), input.size());
  close(in[1]);
  ProcessResult result;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_streams = 2;
  while (open_streams > 0) {
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_streams;
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = decode_status(status);
  return result;
}

ProcessResult run_in_terminal(const std::vector<std::string>& argv, const EnvChanges& env) {
  ExecArgs args(argv, env);
  int master = -1;
  winsize size{40, 200, 0, 0};
  const pid_t pid = forkpty(&master, nullptr, nullptr, &size);
  if (pid < 0) throw std::runtime_error("forkpty failed");
  if (pid == 0) exec_child(args.argv, args.envp);
  ProcessResult result;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(master, buffer, sizeof buffer);
    if (n > 0) {
      result.out.append(buffer, static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EIO once the child has exited and closed the terminal.
    }
  }
  close(master);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = decode_status(status);
  return result;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const EnvChanges& env) {
  ExecArgs args(argv, env);
  int out[2], err[2];
  make_pipe(out);
  make_pipe(err);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    const int null_fd = open("/dev/null", O_RDONLY);
    dup2(null_fd, STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    exec_child(args.argv, args.envp);
  }
  close(out[1]);
  close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
}

ChildProcess::~ChildProcess() {
  if (!exit_code_) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
  if (err_fd_ >= 0) close(err_fd_);
}

bool ChildProcess::read_some(std::chrono::milliseconds timeout) {
  pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
  if (out_fd_ < 0 && err_fd_ < 0) return false;
  if (poll(fds, 2, static_cast<int>(timeout.count())) <= 0) return true;
  int* owners[2] = {&out_fd_, &err_fd_};
  std::string* sinks[2] = {&out_, &err_};
  for (int i = 0; i < 2; ++i) {
    if (fds[i].fd < 0 || fds[i].revents == 0) continue;
    char buffer[4096];
    const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
    if (n > 0) {
      sinks[i]->append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      close(fds[i].fd);
      *owners[i] = -1;
    }
  }
  return true;
}

bool ChildProcess::wait_for_output(Stream stream, const std::string& needle,
                                   std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string& text = stream == Stream::kOut ? out_ : err_;
  while (text.find(needle) == std::string::npos) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || !read_some(left)) return text.find(needle) != std::string::npos;
  }
  return true;
}

bool ChildProcess::wait_for_lines(Stream stream, std::size_t lines,
                                  std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string& text = stream == Stream::kOut ? out_ : err_;
  const auto complete = [&]() {
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) >= lines;
  };
  while (!complete()) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || !read_some(left)) return complete();
  }
  return true;
}

void ChildProcess::signal(int signal_number) {
  if (!exit_code_) kill(pid_, signal_number);
}

std::optional<int> ChildProcess::wait(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!exit_code_) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = decode_status(status);
      break;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return std::nullopt;
    // Reading blocks until output arrives or the child closes its streams at exit.
    if (!read_some(std::min(left, std::chrono::milliseconds(50)))) {
      waitpid(pid_, &status, 0);
      exit_code_ = decode_status(status);
    }
  }
  while (read_some(std::chrono::milliseconds(0)) && (out_fd_ >= 0 || err_fd_ >= 0)) {
  }
  return exit_code_;
}

}  // namespace sluice::test
