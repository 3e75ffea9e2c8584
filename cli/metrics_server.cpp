#include "metrics_server.hpp"

#include <httplib.h>

#include <iostream>
#include <thread>

#include "interrupt.hpp"
#include "sluice/database.hpp"
#include "sluice/error.hpp"
#include "sluice/stats.hpp"
#include "usage_error.hpp"

namespace sluice::cli {
namespace {

std::pair<std::string, int> split_host_port(const std::string& listen) {
  const auto colon = listen.rfind(':');
  const auto bad = [&listen]() {
    return UsageError("invalid --listen '" + listen + "': expected HOST:PORT, e.g. 127.0.0.1:9464");
  };
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) throw bad();
  const std::string port_text = listen.substr(colon + 1);
  if (port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string::npos) {
    throw bad();
  }
  const int port = std::stoi(port_text);
  if (port > 65535) throw bad();
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return {host, port};
}

}  // namespace

void serve_metrics(const Session& session, const std::string& listen) {
  const auto [host, port] = split_host_port(listen);
  // Fail now, not on the first scrape, if the file is missing or unusable.
  session.open();

  httplib::Server server;
  server.Get("/metrics", [&session](const httplib::Request&, httplib::Response& response) {
    try {
      // A connection per scrape: connections are never shared between the server's threads.
      SQLite::Database db = session.open();
      response.set_content(metrics_text(db, session.options()),
                           "text/plain; version=0.0.4; charset=utf-8");
    } catch (const std::exception& e) {
      response.status = 503;
      response.set_content(std::string("sluice: ") + e.what() + "\n", "text/plain");
    }
  });

  InterruptWatch interrupt;
  const int bound_port = port == 0 ? server.bind_to_any_port(host) : port;
  if (bound_port < 0 || (port != 0 && !server.bind_to_port(host, port))) {
    throw UsageError("cannot listen on " + listen + ": address unavailable or in use");
  }
  std::thread serving([&server]() { server.listen_after_bind(); });
  std::cerr << "serving http://" << host << ":" << bound_port << "/metrics (Ctrl-C to stop)"
            << std::endl;
  while (!interrupt.wait_for(std::chrono::seconds(1))) {
  }
  server.stop();
  serving.join();
}

}  // namespace sluice::cli
