// An HTTP endpoint for Prometheus to scrape, shared by `sluice metrics --listen` and the NATS
// relay and ingester's --metrics-listen.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace sluice::cli {

class HttpServer;

// Serves GET /metrics from its own threads (HttpServer) until destroyed. Construct and destroy it
// on one thread; `render` is called on the server's threads, once per request.
class MetricsServer {
 public:
  // Listens on `listen` ("HOST:PORT"; port 0 picks a free one). A `render` that throws answers
  // 503 with its message. Throws UsageError for a malformed or unavailable address.
  MetricsServer(const std::string& listen, std::function<std::string()> render);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // "http://HOST:PORT/metrics" with the bound port.
  const std::string& url() const { return url_; }

 private:
  std::unique_ptr<HttpServer> server_;
  std::string url_;
};

}  // namespace sluice::cli
