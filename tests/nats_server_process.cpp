#include "nats_server_process.hpp"

#include <arpa/inet.h>
#include <nats/nats.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string_view>
#include <thread>

namespace sluice::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kStartDeadline = std::chrono::seconds(20);
constexpr auto kPollPause = std::chrono::milliseconds(20);

sockaddr_in loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

bool accepts_connections(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = loopback(port);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return ok;
}

bool jetstream_answers(const std::string& url) {
  natsConnection* connection = nullptr;
  if (natsConnection_ConnectTo(&connection, url.c_str()) != NATS_OK) return false;
  natsMsg* reply = nullptr;
  bool ok = natsConnection_RequestString(&reply, connection, "$JS.API.INFO", "", 1000) == NATS_OK;
  if (ok) {
    std::string_view body(natsMsg_GetData(reply), natsMsg_GetDataLength(reply));
    ok = body.find("\"error\"") == std::string_view::npos;
  }
  natsMsg_Destroy(reply);
  natsConnection_Destroy(connection);
  return ok;
}

// Whether the cluster can place a 3-replica stream now: every peer is known to the meta leader.
bool places_three_replicas(const std::string& url) {
  natsConnection* connection = nullptr;
  if (natsConnection_ConnectTo(&connection, url.c_str()) != NATS_OK) return false;
  natsMsg* reply = nullptr;
  bool ok = natsConnection_RequestString(
                &reply, connection, "$JS.API.STREAM.CREATE.SLUICE_READY",
                R"({"name":"SLUICE_READY","subjects":["sluice-ready-check"],"num_replicas":3,)"
                R"("storage":"memory"})",
                2000) == NATS_OK;
  if (ok) {
    std::string_view body(natsMsg_GetData(reply), natsMsg_GetDataLength(reply));
    ok = body.find("\"error\"") == std::string_view::npos;
  }
  natsMsg_Destroy(reply);
  reply = nullptr;
  if (ok && natsConnection_RequestString(&reply, connection, "$JS.API.STREAM.DELETE.SLUICE_READY",
                                         "", 2000) == NATS_OK)
    natsMsg_Destroy(reply);
  natsConnection_Destroy(connection);
  return ok;
}

std::string route_url(int port) { return "nats://127.0.0.1:" + std::to_string(port); }

}  // namespace

// The sockets stay bound until every port is picked, so the ports differ.
std::vector<int> free_loopback_ports(int count) {
  std::vector<int> sockets;
  std::vector<int> ports;
  for (int i = 0; i < count; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address = loopback(0);
    socklen_t length = sizeof address;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ::close(fd);
      for (int open_fd : sockets) ::close(open_fd);
      throw std::runtime_error("free_loopback_ports: bind failed");
    }
    sockets.push_back(fd);
    ports.push_back(ntohs(address.sin_port));
  }
  for (int fd : sockets) ::close(fd);
  return ports;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "sluice-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("TempDir: mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

NatsServerProcess::NatsServerProcess(NatsServerSettings settings) : settings_(std::move(settings)) {
  if (settings_.port == 0) settings_.port = free_loopback_ports(1).front();
  if (settings_.store_dir.empty()) settings_.store_dir = owned_dir_.file("store");
  log_path_ = owned_dir_.file("nats-server.log");
  start();
}

NatsServerProcess::~NatsServerProcess() = default;

std::string NatsServerProcess::url() const { return route_url(settings_.port); }

void NatsServerProcess::launch() {
  std::vector<std::string> args = {"nats-server",
                                   "-js",
                                   "-a",
                                   "127.0.0.1",
                                   "-p",
                                   std::to_string(settings_.port),
                                   "-sd",
                                   settings_.store_dir,
                                   "--server_name",
                                   settings_.server_name};
  if (!settings_.cluster_name.empty()) {
    std::string routes;
    for (int port : settings_.route_ports) routes += (routes.empty() ? "" : ",") + route_url(port);
    args.insert(args.end(), {"--cluster_name", settings_.cluster_name, "--cluster",
                             route_url(settings_.cluster_port), "--routes", routes});
  }
  child_ = std::make_unique<ChildProcess>(std::move(args), log_path_);
}

void NatsServerProcess::start() {
  if (running()) return;
  launch();
  const auto deadline = Clock::now() + kStartDeadline;
  while (!accepts_connections(settings_.port)) {
    if (!child_->running())
      throw std::runtime_error("nats-server exited at start; see " + log_path_);
    if (Clock::now() > deadline)
      throw std::runtime_error("nats-server did not start: " + log_path_);
    std::this_thread::sleep_for(kPollPause);
  }
  if (settings_.cluster_name.empty()) wait_until_ready();
}

void NatsServerProcess::wait_until_ready() const {
  const auto deadline = Clock::now() + kStartDeadline;
  while (!jetstream_answers(url())) {
    if (Clock::now() > deadline)
      throw std::runtime_error("JetStream not ready on " + url() + "; see " + log_path_);
    std::this_thread::sleep_for(kPollPause);
  }
}

void NatsServerProcess::kill_hard() {
  if (running()) child_->end(SIGKILL);
}

void NatsServerProcess::stop() {
  if (running()) child_->end(SIGTERM);
}

NatsCluster::NatsCluster() {
  std::vector<int> ports = free_loopback_ports(6);
  std::vector<int> cluster_ports(ports.begin() + 3, ports.end());
  for (int i = 0; i < 3; ++i) {
    NatsServerSettings settings;
    settings.port = ports[i];
    settings.server_name = "sluice-node-" + std::to_string(i);
    settings.cluster_name = "sluice-test-cluster";
    settings.cluster_port = cluster_ports[i];
    for (int j = 0; j < 3; ++j)
      if (j != i) settings.route_ports.push_back(cluster_ports[j]);
    nodes_.push_back(std::make_unique<NatsServerProcess>(settings));
  }
  for (auto& node : nodes_) node->wait_until_ready();
  const auto deadline = Clock::now() + kStartDeadline;
  while (!places_three_replicas(nodes_[0]->url())) {
    if (Clock::now() > deadline) throw std::runtime_error("the 3-node cluster did not form");
    std::this_thread::sleep_for(kPollPause);
  }
}

std::string NatsCluster::urls() const {
  std::string urls;
  for (const auto& node : nodes_) urls += (urls.empty() ? "" : ",") + node->url();
  return urls;
}

}  // namespace sluice::testing
