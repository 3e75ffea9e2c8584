#include "node_script.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace bench {
namespace {

// Closes a descriptor once, on every path out.
class Descriptor {
 public:
  explicit Descriptor(int fd = -1) : fd_(fd) {}
  ~Descriptor() { close_now(); }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }
  void close_now() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

}  // namespace

std::string run_node_script(const std::string& node, const std::string& script,
                            const std::vector<std::string>& args) {
  const std::string what = "bench: node " + script;
  int ends[2];
  if (pipe(ends) != 0) throw std::runtime_error(what + ": pipe: " + std::strerror(errno));
  Descriptor read_end(ends[0]);
  Descriptor write_end(ends[1]);

  std::vector<std::string> words{node, script};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  // fork and exec rather than posix_spawn, for PR_SET_PDEATHSIG: a script goes with the bench when
  // the bench is killed (it would otherwise, say, retry a Redis that went with the bench forever).
  // The message is made here: after fork the child only makes system calls.
  const std::string cannot_exec = what + ": cannot start " + node + "\n";
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(write_end.get(), STDOUT_FILENO);
    ::close(read_end.get());
    ::close(write_end.get());
    execvp(argv[0], argv.data());
    (void)!::write(STDERR_FILENO, cannot_exec.data(), cannot_exec.size());
    _exit(127);
  }
  if (pid < 0) throw std::runtime_error(what + ": fork: " + std::strerror(errno));
  write_end.close_now();  // so that the read below ends when the child exits

  std::string output;
  char buffer[4096];
  for (;;) {
    const ssize_t got = read(read_end.get(), buffer, sizeof buffer);
    if (got > 0) {
      output.append(buffer, static_cast<std::size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(what + " failed (wait status " + std::to_string(status) +
                             "); its error is above");
  }
  return output;
}

}  // namespace bench
