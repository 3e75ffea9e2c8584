// Test support: a real `nats-server -js` on 127.0.0.1 with a free port and a temporary store,
// started by the test and stopped by PID, also when the test fails or the process dies.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "child_process.hpp"

namespace sluice::testing {

// `count` distinct TCP ports free on 127.0.0.1 at the time of the call.
std::vector<int> free_loopback_ports(int count);

// A temporary directory removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

struct NatsServerSettings {
  // 0: pick a free port.
  int port = 0;
  // Empty: a temporary directory owned by the process object.
  std::string store_dir;
  std::string server_name = "sluice-test";
  // Set for a cluster member: its route port and its peers' route ports.
  std::string cluster_name;
  int cluster_port = 0;
  std::vector<int> route_ports;
};

// Not thread-safe. One nats-server child process (see ChildProcess).
class NatsServerProcess {
 public:
  // Starts the server and returns once it accepts connections and JetStream answers.
  explicit NatsServerProcess(NatsServerSettings settings = {});
  ~NatsServerProcess();
  NatsServerProcess(const NatsServerProcess&) = delete;
  NatsServerProcess& operator=(const NatsServerProcess&) = delete;

  // SIGKILL, as a crash: nothing is flushed or said goodbye.
  void kill_hard();
  // SIGTERM and wait for exit.
  void stop();
  // Starts again on the same port and store; waits as the constructor does.
  void start();
  // Waits until JetStream answers on this server (for a cluster member: until the cluster has a
  // JetStream meta leader).
  void wait_until_ready() const;

  bool running() const { return child_ && child_->running(); }
  int port() const { return settings_.port; }
  std::string url() const;
  const std::string& log_path() const { return log_path_; }

 private:
  void launch();

  NatsServerSettings settings_;
  TempDir owned_dir_;
  std::string log_path_;
  std::unique_ptr<ChildProcess> child_;
};

// Three nats-server processes routed together on loopback, JetStream clustered. Constructed
// once the cluster can place a 3-replica stream.
class NatsCluster {
 public:
  NatsCluster();
  NatsServerProcess& node(int i) { return *nodes_[i]; }
  // All three client URLs, comma-separated, for a client that fails over.
  std::string urls() const;

 private:
  std::vector<std::unique_ptr<NatsServerProcess>> nodes_;
};

}  // namespace sluice::testing
