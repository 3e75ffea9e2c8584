// Read-only commands never write: on an app's plain SQLite file, an older sluice schema and a
// sluice file in use, the file and its -wal keep every byte.
#include <SQLiteCpp/Transaction.h>
#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>

#include "support/cli_fixture.hpp"

using namespace sluice::test;
using nlohmann::json;
using std::chrono::seconds;

namespace {

// Every command that only reads, with an event ID it can look up.
std::vector<std::vector<std::string>> read_only_commands(const std::string& id,
                                                         const std::string& export_path) {
  return {{"stats"},
          {"stats", "--json"},
          {"events"},
          {"show", id},
          {"dlq", "list"},
          {"dlq", "show", id},
          {"check"},
          {"metrics"},
          {"export", "--event", id, "-o", export_path},
          {"audit"},
          {"audit", "--json"},
          {"workers"},
          {"workers", "--json"}};
}

// The bytes of the file and of its -wal (nullopt when there is none).
struct Snapshot {
  std::string db;
  std::optional<std::string> wal;
};

Snapshot snapshot(const std::string& path) {
  Snapshot s{file_bytes(path), std::nullopt};
  if (std::filesystem::exists(path + "-wal")) s.wal = file_bytes(path + "-wal");
  return s;
}

// The file kept its bytes; a -wal that existed kept its bytes, and one that did not exist is at
// most the empty one any SQLite reader of a WAL file leaves.
void check_unchanged(const std::string& path, const Snapshot& before) {
  const Snapshot after = snapshot(path);
  CHECK(after.db == before.db);
  if (before.wal) {
    CHECK(after.wal == before.wal);
  } else {
    CHECK((!after.wal || after.wal->empty()));
  }
}

void run_tail(const CliFixture& f) {
  ChildProcess tail({cli_path(), "--db", f.db_path, "tail"}, CliFixture::clean_env({}));
  if (tail.wait_for_output(ChildProcess::Stream::kErr, "following", seconds(20))) {
    tail.signal(SIGINT);
  }
  tail.wait(seconds(20));
}

// An app's own file: one table, rollback journal, no sluice tables.
void write_app_file(const std::string& path) {
  SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  db.exec("CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT)");
  db.exec("INSERT INTO orders VALUES ('42', 'placed')");
}

}  // namespace

TEST_CASE("read-only commands on an app's plain SQLite file write nothing: not a sluice file") {
  CliFixture f;
  write_app_file(f.db_path);
  const Snapshot before = snapshot(f.db_path);
  for (const auto& command : read_only_commands("some-id", f.dir.file("out.db"))) {
    CAPTURE(command);
    const auto result = f.sluice(command);
    CHECK(result.exit_code == (command[0] == "check" ? 4 : 5));
    if (command[0] == "check") {
      CHECK(result.out.find("not a sluice file") != std::string::npos);
    } else {
      CHECK(result.err == "sluice: " + f.db_path +
                              " is not a sluice file (no sluice tables); run `sluice init`\n");
    }
    check_unchanged(f.db_path, before);
  }
  run_tail(f);
  check_unchanged(f.db_path, before);
  SQLite::Database db(f.db_path, SQLite::OPEN_READONLY);
  CHECK(db.execAndGet("PRAGMA journal_mode").getString() == "delete");
  CHECK(db.execAndGet("SELECT count(*) FROM sqlite_master WHERE name LIKE 'sluice%'").getInt() ==
        0);
  CHECK_FALSE(std::filesystem::exists(f.dir.file("out.db")));
}

TEST_CASE("read-only commands on an empty file leave it empty") {
  CliFixture f;
  std::ofstream(f.db_path).close();
  for (const auto& command : read_only_commands("some-id", f.dir.file("out.db"))) {
    CAPTURE(command);
    CHECK(f.sluice(command).exit_code == (command[0] == "check" ? 4 : 5));
    CHECK(std::filesystem::file_size(f.db_path) == 0);
  }
}

TEST_CASE("write commands refuse a plain SQLite file rather than add sluice tables to it") {
  CliFixture f;
  write_app_file(f.db_path);
  const Snapshot before = snapshot(f.db_path);
  const auto result = f.sluice({"enqueue", "--topic", "t", "--payload", "{}"});
  CHECK(result.exit_code == 5);
  CHECK(result.err.find("run `sluice init`") != std::string::npos);
  check_unchanged(f.db_path, before);
}

TEST_CASE("an older schema is never migrated by reading; sluice migrate upgrades it") {
  CliFixture f;
  f.init();
  const std::string id = f.enqueue_order(1, true);
  f.deliver();
  {
    // As version 3 left the file: its crash-suspect index, its version.
    SQLite::Database db(f.db_path, SQLite::OPEN_READWRITE);
    db.exec(R"sql(
      DROP INDEX sluice_deliveries_suspect;
      CREATE INDEX sluice_deliveries_suspect ON sluice_deliveries (consumer_id, next_attempt_at)
        WHERE suspect = 1 AND state = 'pending';
      DROP TABLE sluice_audit;
      DROP INDEX sluice_events_created;
      DROP INDEX sluice_events_key;
      ALTER TABLE sluice_events DROP COLUMN version;
      ALTER TABLE sluice_consumers DROP COLUMN paused_at;
      ALTER TABLE sluice_consumers DROP COLUMN paused_until;
      ALTER TABLE sluice_consumers DROP COLUMN pause_note;
      ALTER TABLE sluice_consumers DROP COLUMN paused_by;
      ALTER TABLE sluice_consumers DROP COLUMN throttled_total;
      ALTER TABLE sluice_consumers DROP COLUMN breaker_failures;
      ALTER TABLE sluice_consumers DROP COLUMN breaker_cool_down_ms;
      ALTER TABLE sluice_consumers DROP COLUMN breaker_max_cool_down_ms;
      ALTER TABLE sluice_consumers DROP COLUMN breaker_consecutive;
      ALTER TABLE sluice_consumers DROP COLUMN breaker_open_until;
      ALTER TABLE sluice_consumers DROP COLUMN breaker_open_ms;
      ALTER TABLE sluice_consumers DROP COLUMN breaker_probe;
      DROP TABLE sluice_workers;
      ALTER TABLE sluice_claims DROP COLUMN worker_id;
      DELETE FROM sluice_meta WHERE name IN ('claim_ids', 'consumer_ids');
      ALTER TABLE sluice_consumers DROP COLUMN initial_backoff_ms;
      ALTER TABLE sluice_consumers DROP COLUMN max_backoff_ms;
      ALTER TABLE sluice_consumers DROP COLUMN backoff_multiplier;
      ALTER TABLE sluice_consumers DROP COLUMN backoff_jitter;
      ALTER TABLE sluice_consumers DROP COLUMN backoff_seed;
      UPDATE sluice_meta SET value = 3 WHERE name = 'schema_version';
    )sql");
  }
  const Snapshot before = snapshot(f.db_path);
  const std::string current = std::to_string(sluice::schema_version());
  for (const auto& command : read_only_commands(id, f.dir.file("out.db"))) {
    CAPTURE(command);
    const auto result = f.sluice(command);
    CHECK(result.exit_code == (command[0] == "check" ? 4 : 5));
    const std::string& text = command[0] == "check" ? result.out : result.err;
    CHECK(text.find("schema version 3 is older than this sluice's " + current) !=
          std::string::npos);
    CHECK(text.find("sluice migrate") != std::string::npos);
    check_unchanged(f.db_path, before);
  }
  run_tail(f);
  check_unchanged(f.db_path, before);
  CHECK(f.sluice({"enqueue", "--topic", "t"}).exit_code == 5);
  check_unchanged(f.db_path, before);

  const auto migrated = f.sluice({"migrate"});
  CHECK(migrated.exit_code == 0);
  CHECK(migrated.out == "migrated " + f.db_path + " from schema version 3 to " + current + "\n");
  CHECK(f.json({"dlq", "show", id})["event"]["id"] == id);
  CHECK(f.sluice({"migrate"}).out == f.db_path + " is at schema version " + current + " already\n");
}

TEST_CASE("migrate refuses a file that is not a sluice file and creates none") {
  CliFixture f;
  CHECK(f.sluice({"migrate"}).exit_code == 1);
  CHECK_FALSE(std::filesystem::exists(f.db_path));
  write_app_file(f.db_path);
  const Snapshot before = snapshot(f.db_path);
  CHECK(f.sluice({"migrate"}).exit_code == 5);
  check_unchanged(f.db_path, before);
}

TEST_CASE("read-only commands leave a sluice file in use byte for byte, its -wal included") {
  CliFixture f;
  f.init();
  f.enqueue_order(1);
  const std::string id = f.enqueue_order(2, true);
  f.deliver();
  // The app keeps the file open with commits in its -wal, not yet checkpointed.
  SQLite::Database app(f.db_path, SQLite::OPEN_READWRITE);
  app.exec("PRAGMA wal_autocheckpoint = 0");
  app.exec("INSERT INTO applied (event_id) VALUES ('by the app')");
  const Snapshot before = snapshot(f.db_path);
  REQUIRE(before.wal);
  REQUIRE_FALSE(before.wal->empty());
  for (const auto& command : read_only_commands(id, f.dir.file("out.db"))) {
    CAPTURE(command);
    const auto result = f.sluice(command);
    INFO(result.err);
    CHECK(result.exit_code == (command[0] == "check" ? 1 : 0));  // check: the dead letter
    check_unchanged(f.db_path, before);
  }
  run_tail(f);
  check_unchanged(f.db_path, before);
  CHECK(file_bytes(f.db_path + "-wal") == *before.wal);
}
