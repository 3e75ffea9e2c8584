// Slow and idle connections cannot stop the console or a /metrics listener answering: hundreds of
// loopback connections that send nothing, or a request header a byte at a time, before any token
// check, while an operator's requests are still answered within a second. A header that has not
// arrived whole within the deadline is cut off, and past the connection cap the oldest waiting
// connection makes room.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <regex>
#include <thread>

#include "support/cli_fixture.hpp"

using namespace sluice::test;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

namespace {

// The server's limits (cli/http_server.hpp) as an outsider sees them.
constexpr auto kHeaderDeadline = seconds(5);
constexpr int kConnectionCap = 256;

// Not thread-safe. Loopback connections to `port`: `idle` that only connect, `trickling` that
// send a request header one byte every 100 ms from a thread of their own, never finishing it.
class SlowClients {
 public:
  SlowClients(int port, int idle, int trickling) {
    for (int i = 0; i < idle + trickling; ++i) {
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      REQUIRE(fd >= 0);
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_port = htons(static_cast<uint16_t>(port));
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
      (i < idle ? idle_ : trickling_).push_back(Connection{fd});
    }
    trickle_ = std::thread([this] { trickle(); });
  }

  ~SlowClients() {
    stop_ = true;
    trickle_.join();
    for (auto* group : {&idle_, &trickling_}) {
      for (const Connection& c : *group) close(c.fd);
    }
  }

  // How many of the idle connections the server has closed by now.
  int idle_closed() {
    int closed = 0;
    for (Connection& c : idle_) closed += closed_by_server(c) ? 1 : 0;
    return closed;
  }

  // How many of the trickling connections the server closed (seen by the trickling thread).
  int trickling_closed() const { return trickling_closed_; }
  int trickling() const { return static_cast<int>(trickling_.size()); }

 private:
  struct Connection {
    int fd;
    bool closed = false;
    std::size_t sent = 0;
  };

  static bool closed_by_server(Connection& c) {
    if (c.closed) return true;
    pollfd p{c.fd, POLLIN, 0};
    if (poll(&p, 1, 0) == 1) {
      char buffer[512];
      const ssize_t n = recv(c.fd, buffer, sizeof buffer, MSG_DONTWAIT);
      c.closed = n == 0 || (n < 0 && errno != EAGAIN);
    }
    return c.closed;
  }

  void trickle() {
    static const std::string header =
        "GET /api/session HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + std::string(4000, 'x');
    while (!stop_) {
      for (Connection& c : trickling_) {
        if (c.closed) continue;
        if (!closed_by_server(c)) {
          const char byte = header[c.sent++ % header.size()];
          if (send(c.fd, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN) {
            c.closed = true;
          }
        }
        if (c.closed) ++trickling_closed_;
      }
      poll(nullptr, 0, 100);  // the trickle's pace, not a wait for anything
    }
  }

  std::vector<Connection> idle_;
  std::vector<Connection> trickling_;
  std::atomic<bool> stop_{false};
  std::atomic<int> trickling_closed_{0};
  std::thread trickle_;
};

// Not thread-safe. A `sluice` command serving HTTP on a free loopback port, which it announces
// on `stream` as http://127.0.0.1:PORT/, stopped with SIGINT.
struct Listener {
  Listener(std::vector<std::string> argv, ChildProcess::Stream stream)
      : process(argv, CliFixture::clean_env({})) {
    REQUIRE(process.wait_for_output(stream, "(Ctrl-C to stop)", seconds(30)));
    std::smatch match;
    const std::string announced =
        stream == ChildProcess::Stream::kOut ? process.out() : process.err();
    REQUIRE(std::regex_search(announced, match, std::regex("http://127\\.0\\.0\\.1:(\\d+)/")));
    port = std::stoi(match[1]);
  }

  ~Listener() {
    process.signal(SIGINT);
    CHECK(process.wait(seconds(30)) == 0);
  }

  // GET `path` on a new connection; its status, or -1 when no answer came within a second.
  int get_within_a_second(const std::string& path, const httplib::Headers& headers = {}) const {
    httplib::Client client("127.0.0.1", port);
    client.set_connection_timeout(1);
    client.set_read_timeout(1);
    client.set_write_timeout(1);
    const auto started = Clock::now();
    const auto answer = client.Get(path.c_str(), headers);
    const auto took = Clock::now() - started;
    INFO(path << " took " << std::chrono::duration_cast<milliseconds>(took).count() << " ms");
    CHECK(took < seconds(1));
    return answer ? answer->status : -1;
  }

  ChildProcess process;
  int port = 0;
};

}  // namespace

TEST_CASE("200 idle and trickling connections: the console answers its page within a second") {
  CliFixture f;
  f.init();
  Listener console(
      {cli_path(), "--db", f.db_path, "console", "--listen", "127.0.0.1:0", "--token", "secret"},
      ChildProcess::Stream::kOut);
  const httplib::Headers token = {{"Authorization", "Bearer secret"}};
  SlowClients slow(console.port, 100, 100);
  const auto loaded = Clock::now();
  // Asked again and again while the slow connections hold on, each time on a new connection.
  while (Clock::now() - loaded < seconds(3)) {
    CHECK(console.get_within_a_second("/api/session", token) == 200);
    CHECK(console.get_within_a_second("/?token=secret") == 200);
    poll(nullptr, 0, 50);
  }
  CHECK(slow.idle_closed() == 0);
  CHECK(slow.trickling_closed() == 0);

  // The header deadline cuts off every trickling connection, however steadily it sends.
  const auto deadline = loaded + kHeaderDeadline + seconds(3);
  while (slow.trickling_closed() < slow.trickling() && Clock::now() < deadline) {
    CHECK(console.get_within_a_second("/api/session", token) == 200);
    poll(nullptr, 0, 50);  // the pace of the operator's requests, not a wait for anything
  }
  CHECK(slow.trickling_closed() == slow.trickling());
  CHECK(slow.idle_closed() == 100);
}

TEST_CASE("past the connection cap the oldest waiting connections are closed to make room") {
  CliFixture f;
  f.init();
  Listener console({cli_path(), "--db", f.db_path, "console", "--listen", "127.0.0.1:0"},
                   ChildProcess::Stream::kOut);
  SlowClients slow(console.port, kConnectionCap + 40, 0);
  CHECK(console.get_within_a_second("/api/session") == 200);
  // The 40 over the cap and the one that asked: the first ones made room, long before the
  // deadline would have closed them.
  CHECK(slow.idle_closed() >= 41);
  CHECK(slow.idle_closed() <= 45);
}

TEST_CASE("200 idle and trickling connections: metrics --listen still answers a scrape") {
  CliFixture f;
  f.init();
  Listener metrics({cli_path(), "--db", f.db_path, "metrics", "--listen", "127.0.0.1:0"},
                   ChildProcess::Stream::kErr);
  SlowClients slow(metrics.port, 100, 100);
  const auto loaded = Clock::now();
  while (Clock::now() - loaded < seconds(2)) {
    CHECK(metrics.get_within_a_second("/metrics") == 200);
    poll(nullptr, 0, 50);
  }
}
