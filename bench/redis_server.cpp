#include "redis_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace bench {
namespace {

// The line redis-server logs once it listens and has loaded its data.
constexpr const char* kReady = "Ready to accept connections";

// A port on 127.0.0.1 that nothing listens on now, as the kernel picks one. Another process may
// take it before redis-server binds it: redis-server then exits saying so, and the case fails
// with that message rather than measuring the wrong server.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("bench: socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                     getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  const int error = errno;
  ::close(fd);
  if (!bound) {
    throw std::runtime_error(std::string("bench: no free port on 127.0.0.1: ") +
                             std::strerror(error));
  }
  return ntohs(address.sin_port);
}

void wait_for_exit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

RedisServer::RedisServer(const std::string& executable, const std::string& dir,
                         const std::vector<std::string>& settings)
    : port_(free_port()) {
  int ends[2];
  if (pipe(ends) != 0)
    throw std::runtime_error(std::string("bench: pipe: ") + std::strerror(errno));
  // Redis's defaults (no config file) but for where it listens and keeps its files; its log on
  // stdout, where the ready line is read from.
  std::vector<std::string> words{executable, "--port", std::to_string(port_), "--bind", "127.0.0.1",
                                 "--dir",    dir,      "--daemonize",         "no",     "--logfile",
                                 ""};
  words.insert(words.end(), settings.begin(), settings.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  // fork and exec rather than posix_spawn, for PR_SET_PDEATHSIG: the server goes with the bench
  // even when the bench is killed and no destructor runs.
  // What the child says if exec fails, made here: after fork the child only makes system calls.
  const std::string cannot_exec = "cannot run " + executable + " (Debian's package redis-server)\n";
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(ends[1], STDOUT_FILENO);
    ::close(ends[0]);
    ::close(ends[1]);
    execvp(argv[0], argv.data());
    (void)!write(STDOUT_FILENO, cannot_exec.data(), cannot_exec.size());
    _exit(127);
  }
  const int forked = errno;
  ::close(ends[1]);
  output_ = ends[0];
  if (pid_ < 0) {
    ::close(output_);
    throw std::runtime_error(std::string("bench: fork: ") + std::strerror(forked));
  }
  std::string log;
  char buffer[4096];
  while (log.find(kReady) == std::string::npos) {
    const ssize_t got = read(output_, buffer, sizeof buffer);
    if (got > 0) {
      log.append(buffer, static_cast<std::size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      wait_for_exit(pid_);
      ::close(output_);
      throw std::runtime_error("bench: " + executable + " exited before it was ready: " + log);
    }
  }
}

RedisServer::~RedisServer() {
  kill(pid_, SIGTERM);
  wait_for_exit(pid_);
  ::close(output_);
}

}  // namespace bench
