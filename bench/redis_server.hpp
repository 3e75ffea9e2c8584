// A redis-server of the bench's own (the BullMQ side of sluice-peers-bench): started on
// 127.0.0.1 on a free port with its own data directory, in the foreground (no system service),
// and stopped by its PID when the object goes, on every path out of a case.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace bench {

// Not thread-safe.
class RedisServer {
 public:
  // Starts `executable` (looked up in PATH unless it holds a slash) with `dir` as its working
  // and data directory, Redis's compiled-in defaults and then `settings` (pairs such as
  // {"--appendonly", "yes"}), and returns once it says it is ready to accept connections.
  // Throws std::runtime_error with what it printed if it cannot start or exits first.
  RedisServer(const std::string& executable, const std::string& dir,
              const std::vector<std::string>& settings);
  // Stops the server (SIGTERM, as an operator would) and waits for it to exit.
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }

 private:
  int port_ = 0;
  pid_t pid_ = -1;
  int output_ = -1;  // the read end of its stdout, kept open so that its log never fails
};

}  // namespace bench
