// Bad files given to the `sluice` command (missing, not SQLite, corrupt, newer schema): a clear
// one-line message on stderr, the documented exit code, and nothing changed.
#include <SQLiteCpp/Transaction.h>
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/cli_fixture.hpp"

using namespace sluice::test;
using nlohmann::json;

namespace {

// One command line per command that takes the file; each must fail the same way on a bad file.
const std::vector<std::vector<std::string>>& every_command() {
  static const std::vector<std::vector<std::string>> commands = {
      {"stats"},
      {"events"},
      {"show", "some-id"},
      {"tail"},
      {"enqueue", "--topic", "t", "--payload", "{}"},
      {"dlq", "list"},
      {"dlq", "show", "some-id"},
      {"dlq", "replay", "--all"},
      {"dlq", "discard", "--all", "--note", "n"},
      {"replay", "--consumer", "c", "--since", "1h"},
      {"prune", "--older-than", "7d"},
      {"export", "--event", "some-id", "-o", "out.db"},
      {"metrics"},
      {"metrics", "--listen", "127.0.0.1:0"},
      {"workers"},
  };
  return commands;
}

}  // namespace

TEST_CASE("a missing file is never created: exit 1 naming the file") {
  CliFixture f;
  for (const auto& command : every_command()) {
    CAPTURE(command[0]);
    const auto result = f.sluice(command);
    CHECK(result.exit_code == 1);
    CHECK(result.err.find("no file at '" + f.db_path + "'") != std::string::npos);
    CHECK(one_line(result.err));
    CHECK_FALSE(std::filesystem::exists(f.db_path));
  }
  const auto check = f.sluice({"check", "--json"});
  CHECK(check.exit_code == 4);
  CHECK(json::parse(check.out)["checks"][0]["name"] == "file");
  CHECK_FALSE(std::filesystem::exists(f.db_path));
}

TEST_CASE("no --db and no SLUICE_DB is a usage error") {
  const auto result = CliFixture::sluice_bare({"stats"});
  CHECK(result.exit_code == 2);
  CHECK(result.err ==
        "sluice: no database: pass --db FILE or set SLUICE_DB (see sluice stats --help)\n");
}

TEST_CASE("a file that is not SQLite: exit 3, file untouched; check says problem") {
  CliFixture f;
  {
    std::ofstream out(f.db_path);
    out << "these are not the bytes you are looking for\n";
  }
  const std::string before = file_bytes(f.db_path);
  for (const auto& command : every_command()) {
    CAPTURE(command[0]);
    const auto result = f.sluice(command);
    CHECK(result.exit_code == 3);
    CHECK(one_line(result.err));
    CHECK(result.err.find("not a") != std::string::npos);
  }
  CHECK(f.sluice({"init"}).exit_code == 3);
  const auto check = f.sluice({"check", "--json"});
  CHECK(check.exit_code == 4);
  CHECK(json::parse(check.out)["status"] == "problem");
  CHECK(file_bytes(f.db_path) == before);
}

TEST_CASE("a corrupt file: exit 3; check reports the integrity problem with exit 2") {
  CliFixture f;
  f.init();
  {
    SQLite::Database db = sluice::open_database(f.db_path, f.options());
    sluice::Outbox outbox(db, f.options());
    SQLite::Transaction transaction(db);
    for (int i = 0; i < 300; ++i) outbox.enqueue({.topic = "order.placed"});
    transaction.commit();
  }
  f.deliver();
  {
    // Checkpoint the WAL into the main file, then scribble over pages past the schema page.
    SQLite::Database db(f.db_path, SQLite::OPEN_READWRITE);
    db.exec("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE");
  }
  const auto size = std::filesystem::file_size(f.db_path);
  {
    std::fstream file(f.db_path, std::ios::in | std::ios::out | std::ios::binary);
    const std::string junk(size / 2, '\x5a');
    file.seekp(static_cast<std::streamoff>(size / 4));
    file.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  const auto events = f.sluice({"events", "--limit", "1000"});
  CHECK(events.exit_code == 3);
  CHECK(one_line(events.err));
  const auto check = f.sluice({"check", "--json"});
  CHECK(check.exit_code == 4);
  const auto report = json::parse(check.out);
  CHECK(report["status"] == "problem");
  bool integrity_problem = false;
  for (const auto& c : report["checks"]) {
    integrity_problem |= c["name"] == "integrity" && c["status"] == "problem";
  }
  CHECK(integrity_problem);
}

TEST_CASE("a file with a newer schema: exit 3 naming both versions; nothing changed") {
  CliFixture f;
  f.init();
  const std::string id = f.enqueue_order(1);
  const int newer = sluice::schema_version() + 1;
  {
    SQLite::Database db(f.db_path, SQLite::OPEN_READWRITE);
    db.exec("UPDATE sluice_meta SET value = " + std::to_string(newer) +
            " WHERE name = 'schema_version'");
  }
  for (const auto& command : every_command()) {
    CAPTURE(command[0]);
    const auto result = f.sluice(command);
    CHECK(result.exit_code == 3);
    CHECK(one_line(result.err));
    CHECK(result.err.find(std::to_string(newer)) != std::string::npos);
  }
  CHECK(f.sluice({"init"}).exit_code == 3);
  const auto check = f.sluice({"check", "--json"});
  CHECK(check.exit_code == 4);
  CHECK(json::parse(check.out)["checks"][0]["name"] == "schema");
  SQLite::Database db(f.db_path, SQLite::OPEN_READONLY);
  CHECK(db.execAndGet("SELECT count(*) FROM sluice_events").getInt() == 1);
  CHECK(db.execAndGet("SELECT value FROM sluice_meta WHERE name = 'schema_version'").getInt() ==
        newer);
}

TEST_CASE("a FIFO or a directory as --db: refused at once, naming what it is") {
  CliFixture f;
  REQUIRE(mkfifo(f.db_path.c_str(), 0600) == 0);
  std::vector<std::vector<std::string>> commands = every_command();
  commands.push_back({"init"});
  commands.push_back({"migrate"});
  for (const auto& command : commands) {
    CAPTURE(command[0]);
    std::vector<std::string> argv{cli_path(), "--db", f.db_path};
    argv.insert(argv.end(), command.begin(), command.end());
    ChildProcess child(argv, CliFixture::clean_env({}));
    const auto exit_code = child.wait(std::chrono::seconds(10));
    REQUIRE(exit_code.has_value());
    CHECK(*exit_code == 3);
    CHECK(one_line(child.err()));
    CHECK(child.err().find("'" + f.db_path + "' is a FIFO (named pipe), not a sluice file") !=
          std::string::npos);
  }
  ChildProcess check({cli_path(), "--db", f.db_path, "check", "--json"}, CliFixture::clean_env({}));
  REQUIRE(check.wait(std::chrono::seconds(10)) == 4);
  CHECK(json::parse(check.out())["checks"][0]["name"] == "file");

  std::filesystem::remove(f.db_path);
  std::filesystem::create_directory(f.db_path);
  for (const auto& command : commands) {
    CAPTURE(command[0]);
    const auto result = f.sluice(command);
    CHECK(result.exit_code == 3);
    CHECK(one_line(result.err));
    CHECK(result.err.find("'" + f.db_path + "' is a directory, not a sluice file") !=
          std::string::npos);
  }
  CHECK(std::filesystem::is_empty(f.db_path));
}
