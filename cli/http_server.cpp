#include "http_server.hpp"

#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

#include "deadline_stream.hpp"
#include "listen_address.hpp"
#include "usage_error.hpp"

namespace sluice::cli {
namespace {

using Clock = std::chrono::steady_clock;

// A header larger than this is no request a browser or Prometheus sends.
constexpr std::size_t kMaxHeaderBytes = 64 * 1024;
// Requests on one kept-alive connection before it is closed (httplib's count is 5).
constexpr std::size_t kKeepAliveMax = 100;
// How long one write of an answer may wait for the client to make room.
constexpr std::chrono::milliseconds kWriteTimeout = std::chrono::seconds(5);

// True once `bytes` hold a whole request header (a blank line; httplib takes bare LFs too).
bool has_whole_header(const std::string& bytes) {
  return bytes.find("\r\n\r\n") != std::string::npos || bytes.find("\n\n") != std::string::npos;
}

// Best effort, never waiting: the connection is closed right after.
void send_now(int fd, std::string_view answer) {
  [[maybe_unused]] const ssize_t ignored =
      send(fd, answer.data(), answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

// Wakes the thread waiting in poll() on the pipe's other end.
void wake(int fd) {
  const char byte = 'x';
  [[maybe_unused]] const ssize_t ignored = write(fd, &byte, 1);
}

void close_connection(int fd) {
  shutdown(fd, SHUT_RDWR);
  close(fd);
}

constexpr std::string_view kTimeout =
    "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
constexpr std::string_view kTooLarge =
    "HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: "
    "0\r\n\r\n";
constexpr std::string_view kBusy =
    "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\nContent-Length: "
    "0\r\n\r\n";

}  // namespace

// A connection between requests: its socket, what it sent of the next request so far, and
// when that request's header must have arrived.
struct HttpServer::Connection {
  int fd;
  std::string pending;
  Clock::time_point deadline;
  std::size_t answered = 0;
};

// httplib's routing and request handling, without its accept loop and thread pool.
class HttpServer::Router : public httplib::Server {
 public:
  using httplib::Server::process_request;

  // The socket bind_to_port made, now ours to close.
  int take_listening_socket() { return svr_sock_.exchange(INVALID_SOCKET); }
};

HttpServer::HttpServer(HttpLimits limits) : limits_(limits), router_(std::make_unique<Router>()) {
  // httplib's default options add SO_REUSEPORT, with which a second process bound a port already
  // served and the two answered in turn. SO_REUSEADDR alone refuses a taken port and still lets
  // a restart bind while the last run's connections linger in TIME_WAIT.
  router_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  router_->set_keep_alive_max_count(kKeepAliveMax);
  router_->set_keep_alive_timeout(
      std::chrono::duration_cast<std::chrono::seconds>(limits_.header_deadline).count());
}

HttpServer::~HttpServer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  queued_changed_.notify_all();
  if (wake_write_ >= 0) wake(wake_write_);
  if (waiter_.joinable()) waiter_.join();
  for (std::thread& worker : workers_) worker.join();
  for (const auto& connection : queued_) close_connection(connection->fd);
  for (const auto& connection : returned_) close_connection(connection->fd);
  for (const int fd : {listen_fd_, wake_read_, wake_write_}) {
    if (fd >= 0) close(fd);
  }
}

httplib::Server& HttpServer::routes() { return *router_; }

int HttpServer::listen(const std::string& listen) {
  const auto [host, port] = split_host_port(listen);
  const int bound_port = port == 0 ? router_->bind_to_any_port(host) : port;
  if (bound_port < 0 || (port != 0 && !router_->bind_to_port(host, port))) {
    throw UsageError("cannot listen on " + listen + ": address unavailable or in use");
  }
  listen_fd_ = router_->take_listening_socket();
  // httplib listens with a backlog of 5; connections arriving together must not wait for a
  // retried SYN.
  ::listen(listen_fd_, SOMAXCONN);
  fcntl(listen_fd_, F_SETFL, fcntl(listen_fd_, F_GETFL) | O_NONBLOCK);
  int wake[2];
  if (pipe2(wake, O_NONBLOCK | O_CLOEXEC) != 0) {
    throw UsageError("cannot listen on " + listen + ": no pipe for the server's wake-ups");
  }
  wake_read_ = wake[0];
  wake_write_ = wake[1];
  waiter_ = std::thread([this] { wait_for_requests(); });
  for (std::size_t i = 0; i < limits_.workers; ++i) {
    workers_.emplace_back([this] { answer_requests(); });
  }
  return bound_port;
}

void HttpServer::accept_connections(std::list<std::unique_ptr<Connection>>& waiting) {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors: the longest-waiting connection makes room for the next try.
      if ((errno == EMFILE || errno == ENFILE) && !waiting.empty()) {
        close_connection(waiting.front()->fd);
        waiting.pop_front();
        continue;
      }
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // Out of descriptors with none to close, or another error: the listening socket stays
      // readable, so it is left out of poll() for a while rather than spun on.
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        accept_paused_until_ = Clock::now() + std::chrono::milliseconds(100);
      }
      return;
    }
    // Answers go out as header and body in two writes; with Nagle each answer on a kept-alive
    // connection waited ~40 ms for the client's delayed ACK.
    int yes = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    while (waiting.size() >= limits_.max_waiting) {
      close_connection(waiting.front()->fd);
      waiting.pop_front();
    }
    waiting.push_back(
        std::make_unique<Connection>(Connection{fd, {}, Clock::now() + limits_.header_deadline}));
  }
}

void HttpServer::dispatch(std::unique_ptr<Connection> connection) {
  {
    std::lock_guard lock(mutex_);
    if (queued_.size() < limits_.max_queued) {
      queued_.push_back(std::move(connection));
      queued_changed_.notify_one();
      return;
    }
  }
  send_now(connection->fd, kBusy);
  close_connection(connection->fd);
}

void HttpServer::wait_for_requests() {
  // Oldest first: accepted, or back from a worker, in the order they started waiting.
  std::list<std::unique_ptr<Connection>> waiting;
  std::vector<pollfd> polled;
  std::vector<Connection*> polled_connections;
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) break;
      for (auto& connection : returned_) {
        connection->deadline = Clock::now() + limits_.header_deadline;
        waiting.push_back(std::move(connection));
      }
      returned_.clear();
    }
    // A connection back from a worker may hold the next request whole already.
    for (auto it = waiting.begin(); it != waiting.end();) {
      if (has_whole_header((*it)->pending)) {
        dispatch(std::move(*it));
        it = waiting.erase(it);
      } else {
        ++it;
      }
    }
    const bool accepting = Clock::now() >= accept_paused_until_;
    polled = {{wake_read_, POLLIN, 0}, {accepting ? listen_fd_ : -1, POLLIN, 0}};
    polled_connections.clear();
    Clock::time_point next_deadline = accepting ? Clock::time_point::max() : accept_paused_until_;
    for (const auto& connection : waiting) {
      polled.push_back({connection->fd, POLLIN, 0});
      polled_connections.push_back(connection.get());
      next_deadline = std::min(next_deadline, connection->deadline);
    }
    int timeout_ms = -1;
    if (next_deadline != Clock::time_point::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(next_deadline - Clock::now());
      timeout_ms = static_cast<int>(std::max<long long>(0, left.count()));
    }
    if (poll(polled.data(), polled.size(), timeout_ms) < 0 && errno != EINTR) break;

    if (polled[0].revents != 0) {
      char drained[64];
      while (read(wake_read_, drained, sizeof drained) > 0) {
      }
    }
    // Read what arrived; a connection whose header is whole goes to the workers.
    for (std::size_t i = 0; i < polled_connections.size(); ++i) {
      if (polled[i + 2].revents == 0) continue;
      Connection& connection = *polled_connections[i];
      char bytes[4096];
      const ssize_t n = recv(connection.fd, bytes, sizeof bytes, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) {
        close_connection(connection.fd);
        connection.fd = -1;
        continue;
      }
      connection.pending.append(bytes, static_cast<std::size_t>(n));
      if (connection.pending.size() > kMaxHeaderBytes && !has_whole_header(connection.pending)) {
        send_now(connection.fd, kTooLarge);
        close_connection(connection.fd);
        connection.fd = -1;
      }
    }
    const Clock::time_point now = Clock::now();
    for (auto it = waiting.begin(); it != waiting.end();) {
      Connection& connection = **it;
      if (connection.fd >= 0 && has_whole_header(connection.pending)) {
        dispatch(std::move(*it));
      } else if (connection.fd >= 0 && now >= connection.deadline) {
        // Cut off, however steadily it was sending: an idle keep-alive connection just closes.
        if (!connection.pending.empty()) send_now(connection.fd, kTimeout);
        close_connection(connection.fd);
      } else if (connection.fd >= 0) {
        ++it;
        continue;
      }
      it = waiting.erase(it);
    }
    if (polled[1].revents != 0) accept_connections(waiting);
  }
  for (const auto& connection : waiting) close_connection(connection->fd);
}

void HttpServer::answer_requests() {
  for (;;) {
    std::unique_ptr<Connection> connection;
    {
      std::unique_lock lock(mutex_);
      queued_changed_.wait(lock, [&] { return stopping_ || !queued_.empty(); });
      if (stopping_) return;
      connection = std::move(queued_.front());
      queued_.pop_front();
    }
    bool keep = false;
    {
      const bool last = ++connection->answered >= kKeepAliveMax;
      bool closed_by_request = false;
      DeadlineStream stream(connection->fd, connection->pending,
                            Clock::now() + limits_.header_deadline, kWriteTimeout);
      keep = router_->process_request(stream, last, closed_by_request, nullptr) &&
             !closed_by_request && !last;
    }
    std::lock_guard lock(mutex_);
    if (keep && !stopping_) {
      returned_.push_back(std::move(connection));
      wake(wake_write_);
    } else {
      close_connection(connection->fd);
    }
  }
}

}  // namespace sluice::cli
