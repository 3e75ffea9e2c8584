// Setup for tests of the `sluice` command: a temp dir with a sluice file, the built binary
// (path from SLUICE_CLI, set by meson), and a way to populate the file through the library.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "sluice/sluice.hpp"
#include "temp_dir.hpp"

namespace sluice::test {

inline std::string required_env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) throw std::runtime_error(std::string(name) + " is not set (run via meson)");
  return value;
}

// The bytes of a file, to prove a command left it unchanged.
inline std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// True if `text` is exactly one line: how every CLI error is reported.
inline bool one_line(const std::string& text) {
  return !text.empty() && text.find('\n') == text.size() - 1;
}

inline std::string cli_path() { return required_env("SLUICE_CLI"); }

struct CliFixture {
  CliFixture() : db_path(dir.file("app.db")) {}

  // Runs `sluice --db FILE ARGS...` with no SLUICE_DB or NO_COLOR from the test's environment.
  ProcessResult sluice(const std::vector<std::string>& args, EnvChanges env = {},
                       const std::string& input = {}) const {
    std::vector<std::string> argv{cli_path(), "--db", db_path};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, clean_env(std::move(env)), input);
  }

  // Runs `sluice ARGS...` without --db.
  static ProcessResult sluice_bare(const std::vector<std::string>& args, EnvChanges env = {}) {
    std::vector<std::string> argv{cli_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, clean_env(std::move(env)));
  }

  // Runs a command expected to succeed with --json and parses its output.
  nlohmann::json json(std::vector<std::string> args) const {
    args.push_back("--json");
    const ProcessResult result = sluice(args);
    INFO("stderr: " << result.err);
    REQUIRE(result.exit_code == 0);
    return nlohmann::json::parse(result.out);
  }

  static EnvChanges clean_env(EnvChanges env) {
    env.try_emplace("SLUICE_DB", std::nullopt);
    env.try_emplace("NO_COLOR", std::nullopt);
    return env;
  }

  void init() const { REQUIRE(sluice({"init"}).exit_code == 0); }

  Options options() const {
    Options o;
    o.synchronous = Synchronous::kNormal;
    o.retry.max_attempts = 2;
    o.retry.initial_backoff = std::chrono::milliseconds(1);
    o.retry.jitter = 0;
    return o;
  }

  // Enqueues an order event; `fail` makes the "billing" consumer of deliver() reject it for good.
  std::string enqueue_order(int order, bool fail = false, const std::string& key = {}) const {
    SQLite::Database db = open_database(db_path, options());
    Outbox outbox(db, options());
    NewEvent event;
    event.topic = "order.placed";
    event.payload = "{\"order\":" + std::to_string(order) + (fail ? ",\"fail\":true}" : "}");
    event.key = key;
    return outbox.enqueue_now(event).id;
  }

  // Runs consumer "billing" (order.placed) in this process until idle: it applies orders into
  // the app table `applied` and dead-letters the failing ones with
  // "order N rejected: card 'ORDER-N' declined".
  DrainResult deliver(bool ordered = false) const {
    Worker worker(db_path, options());
    worker.db().exec("CREATE TABLE IF NOT EXISTS applied (event_id TEXT NOT NULL)");
    ConsumerOptions consumer;
    consumer.start_from = StartFrom::kOldest;
    consumer.ordered = ordered;
    worker.subscribe(
        "billing", "order.placed",
        [](const Event& event, Context& ctx) {
          const auto payload = nlohmann::json::parse(event.payload);
          if (payload.value("fail", false)) {
            const std::string order = std::to_string(payload.value("order", 0));
            throw PermanentError("order " + order + " rejected: card 'ORDER-" + order +
                                 "' declined");
          }
          SQLite::Statement insert(ctx.db(), "INSERT INTO applied (event_id) VALUES (?)");
          insert.bind(1, event.id);
          insert.exec();
        },
        consumer);
    return worker.run_until_idle();
  }

  long long applied_count() const {
    SQLite::Database db(db_path);
    return db.execAndGet("SELECT count(*) FROM applied").getInt64();
  }

  TempDir dir;
  std::string db_path;
};

}  // namespace sluice::test
