// The HTTP server of `sluice console`, `sluice metrics --listen` and the relay and ingester's
// --metrics-listen: cpp-httplib's routing behind a front that slow or idle clients cannot stop.
//
// httplib gives each connection a thread of a fixed pool from accept to close and only times
// single reads, so eight connections sending a header byte every few seconds held every thread
// and the console stopped answering. Here one thread waits on every connection at once until a
// whole request header has arrived, and only then hands it to a worker; a header that does not
// arrive within the deadline is cut off, and the connections held are capped.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace httplib {
class Server;
}

namespace sluice::cli {

struct HttpLimits {
  // A request's header must arrive whole within this of the connection being accepted or of
  // the previous answer on it (the keep-alive wait); a request body within this of its header.
  std::chrono::milliseconds header_deadline = std::chrono::seconds(5);
  // Connections held waiting for a request header; past it the one waiting longest is closed.
  std::size_t max_waiting = 256;
  // Threads answering requests whose header has arrived.
  std::size_t workers = 8;
  // Requests waiting for a worker; past it a request is answered 503 at once.
  std::size_t max_queued = 64;
};

// Set up routes on routes(), then call listen() once; serves from its own threads until
// destroyed. Construct, listen and destroy on one thread; handlers run on the worker threads.
class HttpServer {
 public:
  explicit HttpServer(HttpLimits limits = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The routes, handlers and options (never its own listen or stop).
  httplib::Server& routes();

  // Binds HOST:PORT (port 0 picks a free one) and starts serving; returns the bound port.
  // Throws UsageError for a malformed or unavailable address.
  int listen(const std::string& listen);

 private:
  struct Connection;
  class Router;

  // The thread that accepts connections and reads request headers.
  void wait_for_requests();
  // A worker thread: answers queued requests until the server stops.
  void answer_requests();
  // Accepts every pending connection, closing the longest-waiting ones past the cap.
  void accept_connections(std::list<std::unique_ptr<Connection>>& waiting);
  // Hands a connection whose header has arrived to the workers (or answers 503).
  void dispatch(std::unique_ptr<Connection> connection);

  const HttpLimits limits_;
  std::unique_ptr<Router> router_;
  int listen_fd_ = -1;
  // Written to wake the waiting thread: a connection came back from a worker, or stop.
  int wake_read_ = -1;
  int wake_write_ = -1;
  std::mutex mutex_;
  std::condition_variable queued_changed_;
  bool stopping_ = false;
  // While accept() fails for want of descriptors, the listening socket is not polled.
  std::chrono::steady_clock::time_point accept_paused_until_{};
  std::deque<std::unique_ptr<Connection>> queued_;
  std::vector<std::unique_ptr<Connection>> returned_;
  std::thread waiter_;
  std::vector<std::thread> workers_;
};

}  // namespace sluice::cli
