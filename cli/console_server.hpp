// `sluice console`'s HTTP server: the page, the JSON API, and who may use them.
#pragma once

#include <memory>
#include <string>

#include "session.hpp"

namespace httplib {
class Server;
}

namespace sluice::cli {

class ConsoleApi;
class HttpServer;
class ConsoleHistory;

struct ConsoleOptions {
  // HOST:PORT; port 0 picks a free one. Loopback unless `token` is set.
  std::string listen = "127.0.0.1:8080";
  // Every POST is refused (403): the console only shows.
  bool read_only = false;
  // When set, every request must carry it: "Authorization: Bearer TOKEN", or ?token=TOKEN on a
  // page load, which sets a cookie for the page's later requests. Required off loopback.
  std::string token;
  // How often the overview chart is sampled, and how much of it is kept.
  Duration sample_interval = std::chrono::seconds(2);
  Duration history = std::chrono::minutes(10);
};

// Serves from its own threads until destroyed; construct and destroy it on one thread. Each
// request opens its own connection to the file (read-only for GET).
class ConsoleServer {
 public:
  // Listens at once. Throws UsageError for a malformed or unavailable address, or one off
  // loopback without a token; the file's errors as Session::open_read_only.
  ConsoleServer(Session session, ConsoleOptions options);
  ~ConsoleServer();
  ConsoleServer(const ConsoleServer&) = delete;
  ConsoleServer& operator=(const ConsoleServer&) = delete;

  // "http://HOST:PORT/" with the bound port.
  const std::string& url() const { return url_; }

 private:
  void add_routes(httplib::Server& server);

  const ConsoleOptions options_;
  // The page's CSRF token, given by /api/session and required on every POST.
  const std::string csrf_token_;
  std::unique_ptr<ConsoleApi> api_;
  std::unique_ptr<ConsoleHistory> history_;
  std::unique_ptr<HttpServer> server_;
  std::string url_;
};

}  // namespace sluice::cli
