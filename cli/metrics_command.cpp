// `sluice metrics`: Prometheus text exposition, printed once or served over HTTP.
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#include "interrupt.hpp"
#include "metrics_server.hpp"
#include "sluice/stats.hpp"

namespace sluice::cli {
namespace {

// Serves the file's metrics until Ctrl-C, reading the file fresh on each scrape.
void serve_metrics(const Session& session, const std::string& listen) {
  session
      .open_read_only();  // fail now, not on the first scrape, if the file is missing or unusable
  InterruptWatch interrupt;
  // A connection per scrape: connections are never shared between the server's threads.
  MetricsServer server(listen, [&session] {
    SQLite::Database db = session.open_read_only();
    return metrics_text(db, session.options());
  });
  std::cerr << "serving " << server.url() << " (Ctrl-C to stop)" << std::endl;
  while (!interrupt.wait_for(std::chrono::seconds(1))) {
  }
}

}  // namespace

void add_metrics_command(CLI::App& app, std::shared_ptr<Session> session) {
  struct Args {
    std::string listen;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command = app.add_subcommand(
      "metrics", "Prometheus metrics per consumer: print them, or serve /metrics with --listen");
  command->footer(
      "Metrics: sluice_backlog, sluice_lag_seconds, sluice_claimed, sluice_retrying,\n"
      "sluice_dead_letters, sluice_delivered_total, sluice_retries_total,\n"
      "sluice_snoozed_total, sluice_parked_keys, sluice_waiting_for_handler,\n"
      "sluice_paused, sluice_paused_since_seconds, sluice_paused_until_seconds,\n"
      "sluice_throttled_total, sluice_breaker_open, sluice_breaker_failures,\n"
      "sluice_breaker_open_until_seconds, sluice_breaker_cool_down_seconds, each labelled "
      "{consumer=\"...\"}; in a file a NATS ingester writes "
      "to,\n"
      "sluice_ingest_position{stream=\"...\",durable=\"...\"}. relay and ingest serve their own\n"
      "on --metrics-listen (see their --help).\nExample:\n  sluice --db app.db metrics\n"
      "  sluice --db app.db metrics --listen 127.0.0.1:9464");
  command->add_option("--listen", args->listen, "Serve GET /metrics on HOST:PORT until Ctrl-C")
      ->type_name("HOST:PORT");
  command->callback([session, args]() {
    if (!args->listen.empty()) return serve_metrics(*session, args->listen);
    SQLite::Database db = session->open_read_only();
    std::cout << metrics_text(db, session->options());
  });
}

}  // namespace sluice::cli
