// `sluice export` writes an incident file that a unit test opens to replay the incident
// against a (fixed) handler.
#include <SQLiteCpp/Backup.h>
#include <doctest/doctest.h>

#include <filesystem>

#include "sluice/testing.hpp"
#include "support/cli_fixture.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

// Order 2, dead-lettered by billing in a fresh file; returns its event ID.
std::string dead_lettered_order(CliFixture& f) {
  f.init();
  const std::string bad = f.enqueue_order(2, true);
  f.deliver();
  return bad;
}

// `sluice export` of the event; returns the incident file.
std::string export_incident(CliFixture& f, const std::string& event_id) {
  const std::string incident = f.dir.file("incident.db");
  REQUIRE(f.sluice({"export", "--event", event_id, "-o", incident}).exit_code == 0);
  return incident;
}

}  // namespace

TEST_CASE("an exported incident holds the event, its deliveries, attempts and dead letter") {
  CliFixture f;
  f.init();
  const std::string other = f.enqueue_order(1);
  const std::string bad = f.enqueue_order(2, true);
  f.deliver();
  const std::string incident = f.dir.file("incident.db");
  const auto exported = f.json({"export", "--event", bad, "-o", incident});
  CHECK(exported["event_id"] == bad);
  CHECK(exported["rows"]["sluice_events"] == 1);
  CHECK(exported["rows"]["sluice_deliveries"] == 1);
  CHECK(exported["rows"].contains("sluice_attempts"));

  SQLite::Database db = open_database(incident, {}, OpenMode::kExisting);
  CHECK(db.execAndGet("SELECT count(*) FROM sluice_events").getInt() == 1);
  CHECK_THROWS_AS(find_event(db, other), NotFound);
  const Event event = find_event(db, bad);
  CHECK(event.payload == "{\"order\":2,\"fail\":true}");
  const auto dead = list_dead_letters(db, {});
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].consumer == "billing");
  CHECK(dead[0].last_error == "order 2 rejected: card 'ORDER-2' declined");
  CHECK_FALSE(attempt_history(db, event).empty());
}

TEST_CASE("a test replays an exported incident against a fixed handler, also in memory") {
  CliFixture f;
  const std::string bad = dead_lettered_order(f);
  const std::string incident = export_incident(f, bad);

  // Load the incident into :memory: so the replay leaves the incident file as it was.
  SQLite::Database memory(":memory:", SQLite::OPEN_READWRITE);
  {
    SQLite::Database file(incident, SQLite::OPEN_READONLY);
    SQLite::Backup copy(memory, file);
    copy.executeStep();
  }
  // The consumer's options as the incident recorded them (one consumer, one set of options).
  Worker worker(memory, f.options());
  std::vector<std::string> handled;
  worker.subscribe(
      "billing", "order.placed",
      [&handled](const Event& event, Context&) { handled.push_back(event.id); },
      ConsumerOptions{.start_from = StartFrom::kOldest});
  CHECK(worker.run_until_idle().delivered == 0);  // Dead until replayed.
  DeadLetterFilter all;
  CHECK(replay_dead_letters(memory, all) == 1);
  CHECK(worker.run_until_idle().delivered == 1);
  CHECK(handled == std::vector<std::string>{bad});
  CHECK(list_dead_letters(memory, all).empty());
}

TEST_CASE("the testing kit loads an exported incident and replays it against a fixed handler") {
  CliFixture f;
  const std::string bad = dead_lettered_order(f);
  const std::string incident = export_incident(f, bad);
  const std::string before = file_bytes(incident);

  testing::Harness h = testing::Harness::from_incident(incident, f.options());
  const Event event = find_event(h.db(), bad);
  CHECK(testing::require_dead_lettered(h.db(), "billing", bad).last_error ==
        "order 2 rejected: card 'ORDER-2' declined");
  CHECK(h.run([](const Event&, Context&) {}, event).kind == Outcome::Kind::kDone);
  std::vector<std::string> handled;
  h.subscribe("billing", "order.placed",
              [&handled](const Event& e, Context&) { handled.push_back(e.id); });
  CHECK(replay_dead_letters(h.db(), {}, h.options()) == 1);
  CHECK(h.drain().delivered == 1);
  CHECK(handled == std::vector<std::string>{bad});
  CHECK(file_bytes(incident) == before);
}

TEST_CASE("export refuses to write over its own source, by any name, and deletes nothing") {
  CliFixture f;
  f.init();
  for (int order = 1; order <= 3; ++order) f.enqueue_order(order);
  const std::string event = f.enqueue_order(4);
  std::filesystem::create_symlink(f.db_path, f.dir.file("link.db"));
  std::filesystem::create_hard_link(f.db_path, f.dir.file("hard.db"));
  // A reader holds the file open in WAL mode, so its -wal and -shm exist while export runs.
  SQLite::Database reader(f.db_path);
  reader.exec("BEGIN");
  REQUIRE(reader.execAndGet("SELECT count(*) FROM sluice_events").getInt() == 4);
  REQUIRE(std::filesystem::exists(f.db_path + "-wal"));
  const std::vector<std::string> outputs = {f.db_path,
                                            f.dir.file("./app.db"),
                                            f.dir.file("sub/../app.db"),
                                            f.dir.file("link.db"),
                                            f.dir.file("hard.db"),
                                            f.db_path + "-wal",
                                            f.db_path + "-shm"};
  std::filesystem::create_directory(f.dir.file("sub"));
  for (const std::string& output : outputs) {
    CAPTURE(output);
    const auto result = f.sluice({"export", event, "-o", output, "--force"});
    CHECK(result.exit_code == 2);
    CHECK(one_line(result.err));
    CHECK(result.err.find("is the database being exported") != std::string::npos);
  }
  // The same through a relative path from the file's own folder.
  const auto relative = run_process(
      {"/bin/sh", "-c", "cd \"$0\" && \"$1\" --db app.db export \"$2\" -o ./app.db --force",
       f.dir.path().string(), cli_path(), event},
      CliFixture::clean_env({}));
  CHECK(relative.exit_code == 2);
  CHECK(relative.err.find("is the database being exported") != std::string::npos);
  reader.exec("COMMIT");
  CHECK(std::filesystem::exists(f.db_path + "-wal"));
  CHECK(std::filesystem::exists(f.db_path + "-shm"));
  SQLite::Database db(f.db_path);
  CHECK(db.execAndGet("SELECT count(*) FROM sluice_events").getInt() == 4);
}
