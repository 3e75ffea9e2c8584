#include "metrics_server.hpp"

#include <httplib.h>

#include "listen_address.hpp"
#include "usage_error.hpp"

namespace sluice::cli {

MetricsServer::MetricsServer(const std::string& listen, std::function<std::string()> render)
    : server_(std::make_unique<httplib::Server>()) {
  const auto [host, port] = split_host_port(listen);
  // httplib's default options add SO_REUSEPORT, with which a second process bound a port already
  // served and the two answered scrapes in turn. SO_REUSEADDR alone refuses a taken port and
  // still lets a restart bind while the last run's connections linger in TIME_WAIT.
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server_->Get("/metrics",
               [render = std::move(render)](const httplib::Request&, httplib::Response& response) {
                 try {
                   response.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
                 } catch (const std::exception& e) {
                   response.status = 503;
                   response.set_content(std::string("sluice: ") + e.what() + "\n", "text/plain");
                 }
               });
  const int bound_port = port == 0 ? server_->bind_to_any_port(host) : port;
  if (bound_port < 0 || (port != 0 && !server_->bind_to_port(host, port))) {
    throw UsageError("cannot listen on " + listen + ": address unavailable or in use");
  }
  url_ = "http://" + host + ":" + std::to_string(bound_port) + "/metrics";
  thread_ = std::thread([this] { server_->listen_after_bind(); });
}

MetricsServer::~MetricsServer() {
  server_->stop();
  thread_.join();
}

}  // namespace sluice::cli
