// A worker process for CLI tests: consumer "billing" on topic "order.placed" applies each order
// into the app table `applied`, except that an event whose payload says "poison": true fails
// permanently until a row 'poison-fixed' exists in the app table `flags`. Prints "ready" once
// subscribed and started; stops cleanly on SIGTERM or SIGINT.
//
// Usage: cli_test_worker DB_FILE POLL_INTERVAL_MS
#include <SQLiteCpp/SQLiteCpp.h>

#include <csignal>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "sluice/sluice.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: cli_test_worker DB_FILE POLL_INTERVAL_MS\n";
    return 2;
  }
  const std::string path = argv[1];
  sluice::Options options;
  options.poll_interval = std::chrono::milliseconds(std::stoll(argv[2]));
  options.retry.max_attempts = 3;
  options.retry.initial_backoff = std::chrono::milliseconds(10);

  // Block the stop signals before the worker starts its thread, so only sigwait() sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  {
    SQLite::Database db = sluice::open_database(path, options, sluice::OpenMode::kExisting);
    db.exec(
        "CREATE TABLE IF NOT EXISTS flags (name TEXT PRIMARY KEY);"
        "CREATE TABLE IF NOT EXISTS applied (event_id TEXT NOT NULL, applied_at INTEGER)");
  }

  sluice::Worker worker(path, options);
  sluice::ConsumerOptions consumer;
  consumer.start_from = sluice::StartFrom::kOldest;
  worker.subscribe(
      "billing", "order.placed",
      [](const sluice::Event& event, sluice::Context& ctx) {
        const auto payload = nlohmann::json::parse(event.payload);
        const bool poison = payload.value("poison", false);
        const bool fixed =
            ctx.db().execAndGet("SELECT count(*) FROM flags WHERE name = 'poison-fixed'").getInt() >
            0;
        if (poison && !fixed) {
          throw sluice::PermanentError("order " + std::to_string(payload.value("order", 0)) +
                                       " rejected: card '" + event.id + "' declined");
        }
        SQLite::Statement insert(ctx.db(),
                                 "INSERT INTO applied (event_id, applied_at) VALUES (?, "
                                 "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))");
        insert.bind(1, event.id);
        insert.exec();
      },
      consumer);
  worker.start();
  std::cout << "ready" << std::endl;

  int received = 0;
  sigwait(&stop_signals, &received);
  worker.stop();
  return 0;
}
