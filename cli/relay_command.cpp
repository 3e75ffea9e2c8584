#include "relay_command.hpp"

#include <signal.h>

#include <atomic>
#include <functional>
#include <iostream>
#include <memory>
#include <thread>

#include "metrics_server.hpp"
#include "sluice/database.hpp"
#include "sluice/error.hpp"
#include "sluice/ingester.hpp"
#include "sluice/relay.hpp"
#include "sluice/stats.hpp"

namespace sluice::cli {
namespace {

// Each scrape reads the file on a connection of its own: connections are never shared between
// threads.
std::string file_metrics(const std::string& path, const Options& options) {
  SQLite::Database db = open_database(path, options, OpenMode::kExisting);
  return metrics_text(db, options);
}

// Blocks SIGINT and SIGTERM in this thread, and so in every thread started after it, so that
// wait_for_stop_signal() receives them.
sigset_t block_stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

int wait_for_stop_signal(const sigset_t& signals) {
  int signal = 0;
  sigwait(&signals, &signal);
  return signal;
}

Options logging_options() {
  Options options;
  options.log = std::make_shared<JsonLinesSink>(std::cerr, LogLevel::kInfo);
  return options;
}

// Runs the service `make` builds on `file` (a Relay or an Ingester) until SIGINT or SIGTERM,
// serving the file's and the service's metrics on `listen` if given, and logs its start and stop.
// The file must exist (only init creates one) and the port be free before anything starts.
template <class Service>
void serve_until_stopped(const std::string& file,
                         const std::function<std::unique_ptr<Service>()>& make,
                         const std::string& name, const sigset_t& signals, const Options& options,
                         const std::string& listen, const LogFields& fields) {
  open_database(file, options, OpenMode::kExisting);
  std::atomic<const Service*> serving{nullptr};
  std::unique_ptr<MetricsServer> server;
  if (!listen.empty()) {
    server = std::make_unique<MetricsServer>(listen, [&] {
      const Service* service = serving.load();
      if (service == nullptr) throw NotFound(name + " is starting");  // answered 503
      return file_metrics(file, options) + service->metrics_text();
    });
  }
  const std::unique_ptr<Service> service = make();
  serving = service.get();
  service->start();
  options.log->write(LogLevel::kInfo, name + " started", fields);
  const int signal = wait_for_stop_signal(signals);
  service->stop();
  server.reset();  // no scrape may read the service once it is gone
  options.log->write(LogLevel::kInfo, name + " stopped", {{"signal", signal}});
}

// The file named on the command line, else the CLI's --db (or SLUICE_DB).
std::string file_or_db(CLI::App& app, const std::string& file) {
  if (!file.empty()) return file;
  const CLI::Option* db = app.get_option_no_throw("--db");
  if (db != nullptr && db->count() + (db->empty() ? 0 : 1) > 0 && !db->as<std::string>().empty()) {
    return db->as<std::string>();
  }
  throw CLI::RequiredError("FILE or --db");
}

}  // namespace

void add_relay_command(CLI::App& app) {
  struct Arguments {
    std::string file;
    RelayOptions relay;
    bool no_stream_update = false;
    std::string metrics_listen;
  };
  auto arguments = std::make_shared<Arguments>();
  CLI::App* command =
      app.add_subcommand("relay", "Relay a file's events to a NATS JetStream stream");
  command->footer(
      "Runs until SIGINT or SIGTERM, logging JSON lines on stderr. Each event is published once\n"
      "per stream (its ID is the message ID); a relay killed mid-batch publishes again what the\n"
      "stream's duplicate window drops. --metrics-listen serves the file's metrics (see\n"
      "sluice metrics --help) and sluice_relay_published_total, sluice_relay_duplicates_total,\n"
      "sluice_relay_broker_errors_total, sluice_relay_rejected_total, sluice_relay_batches_total.\n"
      "A stream that does not exist is created (subjects PREFIX.> or the topics). One that exists\n"
      "keeps its settings (limits, duplicate window, other relays' subjects): the relay adds its\n"
      "own subjects to it, or with --no-stream-update only checks that it takes them.\n"
      "Example:\n"
      "  sluice --db app.db relay --nats nats://127.0.0.1:4222 --stream ORDERS "
      "--subject-prefix box-7 --topic order.placed --topic order.paid");
  command->add_option("file", arguments->file,
                      "The sluice file, instead of --db (default: --db / SLUICE_DB)");
  command->add_option("--nats", arguments->relay.nats_url, "NATS URL(s), comma-separated")
      ->required();
  command->add_option("--stream", arguments->relay.stream, "JetStream stream")->required();
  command->add_option("--topic", arguments->relay.topics, "Topic to relay (repeatable)")
      ->required();
  command->add_option("--subject-prefix", arguments->relay.subject_prefix,
                      "Subject = PREFIX.topic (default: the topic)");
  command->add_option("--consumer", arguments->relay.consumer, "sluice consumer name")
      ->capture_default_str();
  command->add_option("--replicas", arguments->relay.replicas, "Stream replicas")
      ->capture_default_str();
  command->add_flag("--no-stream-update", arguments->no_stream_update,
                    "Leave an existing stream exactly as it is: check that it takes the relay's "
                    "subjects, and relay nothing until it does");
  command->add_option("--metrics-listen", arguments->metrics_listen,
                      "Serve Prometheus metrics on HOST:PORT");
  command->callback([arguments, &app] {
    arguments->file = file_or_db(app, arguments->file);
    arguments->relay.update_stream = !arguments->no_stream_update;
    const sigset_t signals = block_stop_signals();
    Options options = logging_options();
    // Each batch publishes in rounds that wait for their acknowledgements, so a bigger claim
    // waits less per event: with the default 512 the relay bench relayed 0.34-0.38 of the plain
    // publish rate, with 8192 0.48 (paired runs on one host). A relay killed mid-claim publishes
    // up to a claim again, which the stream's duplicate window drops.
    options.batch_size = 8192;
    serve_until_stopped<Relay>(
        arguments->file,
        [&] { return std::make_unique<Relay>(arguments->file, arguments->relay, options); },
        "relay", signals, options, arguments->metrics_listen,
        {{"file", arguments->file},
         {"nats", arguments->relay.nats_url},
         {"stream", arguments->relay.stream}});
  });
}

void add_ingest_command(CLI::App& app) {
  struct Arguments {
    std::string file;
    IngesterOptions ingester;
    std::string metrics_listen;
  };
  auto arguments = std::make_shared<Arguments>();
  CLI::App* command =
      app.add_subcommand("ingest", "Ingest a NATS JetStream stream's events into a file");
  command->footer(
      "Runs until SIGINT or SIGTERM, logging JSON lines on stderr. Each message is stored once\n"
      "(the event's ID drops a redelivery) in the same transaction as the stream position.\n"
      "--metrics-listen serves the file's metrics (see sluice metrics --help) and\n"
      "sluice_ingest_received_total, sluice_ingest_duplicates_total,\n"
      "sluice_ingest_malformed_total, sluice_ingest_broker_errors_total,\n"
      "sluice_ingest_pending_messages.\nExample:\n"
      "  sluice --db app.db ingest --nats nats://127.0.0.1:4222 --stream ORDERS "
      "--durable billing-site");
  command->add_option("file", arguments->file,
                      "The sluice file, instead of --db (default: --db / SLUICE_DB)");
  command->add_option("--nats", arguments->ingester.nats_url, "NATS URL(s), comma-separated")
      ->required();
  command->add_option("--stream", arguments->ingester.stream, "JetStream stream")->required();
  command->add_option("--durable", arguments->ingester.durable, "Durable consumer name")
      ->required();
  command->add_option("--metrics-listen", arguments->metrics_listen,
                      "Serve Prometheus metrics on HOST:PORT");
  command->callback([arguments, &app] {
    arguments->file = file_or_db(app, arguments->file);
    const sigset_t signals = block_stop_signals();
    const Options options = logging_options();
    serve_until_stopped<Ingester>(
        arguments->file,
        [&] { return std::make_unique<Ingester>(arguments->file, arguments->ingester, options); },
        "ingester", signals, options, arguments->metrics_listen,
        {{"file", arguments->file},
         {"nats", arguments->ingester.nats_url},
         {"stream", arguments->ingester.stream},
         {"durable", arguments->ingester.durable}});
  });
}

void add_nats_commands(CLI::App& app) {
  add_relay_command(app);
  add_ingest_command(app);
}

}  // namespace sluice::cli
