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

// Found by the sluice_file fuzz target: PRAGMA integrity_check itself fails with SQLITE_CORRUPT
// when a table's root page is damaged, and `check` exited 3 with "database error" instead of
// reporting the problem.
TEST_CASE("a table whose root page is damaged: check reports the integrity problem, exit 4") {
  CliFixture f;
  f.init();
  f.enqueue_order(1);
  int root_page = 0;
  int page_size = 0;
  {
    SQLite::Database db(f.db_path, SQLite::OPEN_READWRITE);
    db.exec("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE");
    root_page = db.execAndGet("SELECT rootpage FROM sqlite_master WHERE name = 'sluice_events'");
    page_size = db.execAndGet("PRAGMA page_size");
  }
  {
    // The page's first byte says what kind of b-tree page it is; 0xff is none.
    std::fstream file(f.db_path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(root_page - 1) * page_size);
    file.put('\xff');
  }
  const std::string before = file_bytes(f.db_path);
  const auto check = f.sluice({"check", "--json"});
  CHECK(check.exit_code == 4);
  CAPTURE(check.err);
  const auto report = json::parse(check.out);
  REQUIRE(report["checks"].size() == 1);
  CHECK(report["checks"][0]["name"] == "integrity");
  CHECK(report["checks"][0]["status"] == "problem");
  CHECK(report["checks"][0]["detail"].get<std::string>().find("malformed") != std::string::npos);
  const auto plain = f.sluice({"check"});
  CHECK(plain.exit_code == 4);
  CHECK(plain.out.find("integrity") != std::string::npos);
  CHECK(file_bytes(f.db_path) == before);
}

// Found by the sluice_file fuzz target: a negative schema_version was taken for an older schema,
// and migrating from it indexed the migrations at -1 (undefined behaviour; ASan saw the read).
TEST_CASE("a schema_version that is no version: refused naming it, exit 3; nothing changed") {
  for (const std::string bad : {"-1", "0", "-2147483648", "4294967297", "'three'", "2.5"}) {
    CAPTURE(bad);
    CliFixture f;
    f.init();
    f.enqueue_order(1);
    {
      SQLite::Database db(f.db_path, SQLite::OPEN_READWRITE);
      db.exec("UPDATE sluice_meta SET value = " + bad + " WHERE name = 'schema_version'");
      db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    }
    const std::string before = file_bytes(f.db_path);
    for (const std::vector<std::string> command :
         {std::vector<std::string>{"migrate"}, {"stats"}, {"init"}}) {
      CAPTURE(command[0]);
      const auto result = f.sluice(command);
      CHECK(result.exit_code == 3);
      CHECK(one_line(result.err));
      CHECK(result.err.find("schema_version") != std::string::npos);
    }
    const auto check = f.sluice({"check", "--json"});
    CHECK(check.exit_code == 4);
    CHECK(json::parse(check.out)["checks"][0]["status"] == "problem");
    CHECK(file_bytes(f.db_path) == before);
  }
}

// Found by the sluice_file fuzz target (10 CPU-minute run): bytes written over the schema text
// left sluice_workers without its `locked` column at the current version; check threw
// ("read claims: no such column: w.locked") instead of reporting it.
TEST_CASE("a table that lost a column: check reports the problem, exit 4, nothing changed") {
  CliFixture f;
  f.init();
  f.enqueue_order(1);
  {
    SQLite::Database db(f.db_path, SQLite::OPEN_READWRITE);
    db.exec("ALTER TABLE sluice_workers RENAME COLUMN locked TO lokked");
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  const std::string before = file_bytes(f.db_path);
  const auto check = f.sluice({"check", "--json"});
  CHECK(check.exit_code == 4);
  CAPTURE(check.err);
  const auto report = json::parse(check.out);
  bool reported = false;
  for (const json& c : report["checks"]) {
    reported = reported || (c["status"] == "problem" &&
                            c["detail"].get<std::string>().find("locked") != std::string::npos);
  }
  CHECK(reported);
  const auto plain = f.sluice({"check"});
  CHECK(plain.exit_code == 4);
  CHECK(plain.out.find("locked") != std::string::npos);
  CHECK(file_bytes(f.db_path) == before);
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
