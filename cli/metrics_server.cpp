#include "metrics_server.hpp"

#include <httplib.h>

#include "http_server.hpp"
#include "listen_address.hpp"

namespace sluice::cli {

MetricsServer::MetricsServer(const std::string& listen, std::function<std::string()> render)
    : server_(std::make_unique<HttpServer>()) {
  server_->routes().Get("/metrics", [render = std::move(render)](const httplib::Request&,
                                                                 httplib::Response& response) {
    try {
      response.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
    } catch (const std::exception& e) {
      response.status = 503;
      response.set_content(std::string("sluice: ") + e.what() + "\n", "text/plain");
    }
  });
  const int bound_port = server_->listen(listen);
  url_ = "http://" + split_host_port(listen).first + ":" + std::to_string(bound_port) + "/metrics";
}

MetricsServer::~MetricsServer() = default;

}  // namespace sluice::cli
