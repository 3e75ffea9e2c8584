#include <doctest/doctest.h>

#include <fstream>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::TempDir;

TEST_CASE("open_database creates the schema in WAL mode and records its version") {
  TempDir dir;
  SQLite::Database db = open_database(dir.file("a.db"));
  CHECK(stored_schema_version(db) == schema_version());
  CHECK(db.execAndGet("PRAGMA journal_mode").getString() == "wal");
  CHECK(db.tableExists("sluice_events"));
  CHECK(db.tableExists("sluice_inbox"));
}

TEST_CASE("synchronous follows the options") {
  TempDir dir;
  Options options;
  CHECK(open_database(dir.file("full.db"), options).execAndGet("PRAGMA synchronous").getInt() == 2);
  options.synchronous = Synchronous::kNormal;
  CHECK(open_database(dir.file("normal.db"), options).execAndGet("PRAGMA synchronous").getInt() ==
        1);
}

TEST_CASE("kExisting refuses to create a missing file") {
  TempDir dir;
  CHECK_THROWS_AS(open_database(dir.file("missing.db"), {}, OpenMode::kExisting), NotFound);
  CHECK_FALSE(std::filesystem::exists(dir.file("missing.db")));
}

TEST_CASE("kReadOnly writes nothing: no schema, no journal mode, no migration") {
  TempDir dir;
  const std::string plain = dir.file("plain.db");
  {
    SQLite::Database db(plain, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec("CREATE TABLE orders (id TEXT)");
  }
  {
    SQLite::Database db = open_database(plain, {}, OpenMode::kReadOnly);
    CHECK(stored_schema_version(db) == 0);
    CHECK(db.execAndGet("PRAGMA journal_mode").getString() == "delete");
    CHECK_THROWS(db.exec("CREATE TABLE t (x)"));
  }
  CHECK_FALSE(SQLite::Database(plain).tableExists("sluice_meta"));
  const std::string older = dir.file("older.db");
  open_database(older).exec("UPDATE sluice_meta SET value = 3 WHERE name = 'schema_version'");
  {
    SQLite::Database db = open_database(older, {}, OpenMode::kReadOnly);
    CHECK(stored_schema_version(db) == 3);
  }
  SQLite::Database reopened(older);
  CHECK(stored_schema_version(reopened) == 3);  // still: reading did not migrate it
  CHECK_THROWS_AS(open_database(dir.file("missing.db"), {}, OpenMode::kReadOnly), NotFound);
  CHECK_FALSE(std::filesystem::exists(dir.file("missing.db")));
}

TEST_CASE("an error opening a file names the file and says SQLite's message once") {
  TempDir dir;
  const std::string path = dir.file("no-such-dir/app.db");
  const std::string expected =
      "sluice: open database '" + path + "': unable to open database file (code 14)";
  CHECK_THROWS_WITH(open_database(path), expected.c_str());
}

TEST_CASE("a file that is not a database is refused and left untouched") {
  TempDir dir;
  const std::string path = dir.file("notes.txt");
  std::ofstream(path) << "these are not the droids you are looking for, nor a database file at all";
  const auto size = std::filesystem::file_size(path);
  CHECK_THROWS_AS(open_database(path), NotADatabaseError);
  CHECK(std::filesystem::file_size(path) == size);
}

TEST_CASE("a newer schema is refused naming both versions") {
  TempDir dir;
  const std::string path = dir.file("newer.db");
  {
    SQLite::Database db = open_database(path);
    db.exec("UPDATE sluice_meta SET value = 99 WHERE name = 'schema_version'");
  }
  try {
    open_database(path);
    FAIL("expected SchemaVersionError");
  } catch (const SchemaVersionError& e) {
    CHECK(e.file_version() == 99);
    CHECK(e.library_version() == schema_version());
    CHECK(std::string(e.what()).find("99") != std::string::npos);
  }
}

// What schema version 12 added (payload versions), dropped: turns a new file back into one of
// version 11.
const char* const kWithoutVersion12 = R"sql(
  ALTER TABLE sluice_events DROP COLUMN version;
)sql";

// What schema versions 11 and 12 added (the circuit breaker, payload versions), dropped: turns a
// new file back into one of version 10.
const std::string kWithoutVersion11 = std::string(kWithoutVersion12) + R"sql(
  ALTER TABLE sluice_consumers DROP COLUMN breaker_failures;
  ALTER TABLE sluice_consumers DROP COLUMN breaker_cool_down_ms;
  ALTER TABLE sluice_consumers DROP COLUMN breaker_max_cool_down_ms;
  ALTER TABLE sluice_consumers DROP COLUMN breaker_consecutive;
  ALTER TABLE sluice_consumers DROP COLUMN breaker_open_until;
  ALTER TABLE sluice_consumers DROP COLUMN breaker_open_ms;
  ALTER TABLE sluice_consumers DROP COLUMN breaker_probe;
)sql";

// What schema versions 10 to 12 added, dropped: turns a new file back into one of version 9.
const std::string kWithoutVersion10 = kWithoutVersion11 + R"sql(
  DROP INDEX sluice_events_key;
)sql";

// What schema versions 9 to 12 added, dropped: turns a new file back into one of version 8.
const std::string kWithoutVersion9 = kWithoutVersion10 + R"sql(
  ALTER TABLE sluice_consumers DROP COLUMN paused_at;
  ALTER TABLE sluice_consumers DROP COLUMN paused_until;
  ALTER TABLE sluice_consumers DROP COLUMN pause_note;
  ALTER TABLE sluice_consumers DROP COLUMN paused_by;
  ALTER TABLE sluice_consumers DROP COLUMN throttled_total;
)sql";

// What schema versions 8 to 11 added, dropped: turns a new file back into one of version 7.
// (Version 9's audit table takes what version 7's did, and more.)
const std::string kWithoutVersion8 = kWithoutVersion9 + R"sql(
  ALTER TABLE sluice_consumers DROP COLUMN initial_backoff_ms;
  ALTER TABLE sluice_consumers DROP COLUMN max_backoff_ms;
  ALTER TABLE sluice_consumers DROP COLUMN backoff_multiplier;
  ALTER TABLE sluice_consumers DROP COLUMN backoff_jitter;
  ALTER TABLE sluice_consumers DROP COLUMN backoff_seed;
)sql";

// What schema versions 5 to 11 added, dropped: turns a new file back into one of an older
// version. (Versions 7 and 9 rebuilt sluice_audit, which goes with version 5's.)
const std::string kWithoutVersion5 = kWithoutVersion8 + R"sql(
  DROP TABLE sluice_workers;
  ALTER TABLE sluice_claims DROP COLUMN worker_id;
  DELETE FROM sluice_meta WHERE name IN ('claim_ids', 'consumer_ids');
  DROP TABLE sluice_audit;
  DROP INDEX sluice_events_created;
)sql";

TEST_CASE("a version 1 file of the first sluice_deliveries layout is migrated and delivers") {
  TempDir dir;
  const std::string path = dir.file("v1.db");
  {
    // The file as the first release left it: schema version 1, sluice_deliveries keyed by
    // consumer first with an event index and an IN-list check, no suspect index.
    SQLite::Database db = open_database(path);
    db.exec(R"sql(
      DROP TABLE sluice_deliveries;
      CREATE TABLE sluice_deliveries (
        consumer_id     INTEGER NOT NULL REFERENCES sluice_consumers (id),
        event_seq       INTEGER NOT NULL,
        state           TEXT NOT NULL CHECK (state IN ('pending', 'claimed', 'dead', 'discarded')),
        key             TEXT,
        attempts        INTEGER NOT NULL,
        next_attempt_at INTEGER NOT NULL,
        scheduled_at    INTEGER NOT NULL DEFAULT 0,
        claim_id        INTEGER,
        suspect         INTEGER NOT NULL DEFAULT 0,
        reason          TEXT,
        last_error      TEXT,
        first_failed_at INTEGER,
        last_failed_at  INTEGER,
        note            TEXT,
        PRIMARY KEY (consumer_id, event_seq)
      ) WITHOUT ROWID;
      CREATE INDEX sluice_deliveries_due ON sluice_deliveries (consumer_id, state, next_attempt_at);
      CREATE INDEX sluice_deliveries_key ON sluice_deliveries (consumer_id, key, event_seq)
        WHERE key IS NOT NULL;
      CREATE INDEX sluice_deliveries_event ON sluice_deliveries (event_seq);
      DROP TABLE sluice_attempts;
      CREATE TABLE sluice_attempts (
        id          INTEGER PRIMARY KEY,
        consumer_id INTEGER NOT NULL,
        event_seq   INTEGER NOT NULL,
        attempt     INTEGER NOT NULL,
        at          INTEGER NOT NULL,
        outcome     TEXT NOT NULL,
        error       TEXT
      );
      CREATE INDEX sluice_attempts_event ON sluice_attempts (event_seq);
      UPDATE sluice_meta SET value = 1 WHERE name = 'schema_version';
    )sql");
    db.exec(kWithoutVersion5);
    Outbox(db).enqueue_now({.topic = "t", .key = "k"});
  }
  auto clock = std::make_shared<ManualClock>();
  Options options;
  options.clock = clock;
  options.retry.max_attempts = 2;
  SQLite::Database db = open_database(path, options);
  CHECK(stored_schema_version(db) == schema_version());
  CHECK(db.execAndGet("SELECT count(*) FROM sqlite_master WHERE name = 'sluice_deliveries_suspect'")
            .getInt() == 1);
  Worker worker(db, options);
  int calls = 0;
  worker.subscribe("c", "t",
                   [&](const Event&, Context& ctx) {
                     if (++calls <= 2) ctx.retry("attempt " + std::to_string(calls));
                   },
                   {.ordered = true, .start_from = StartFrom::kOldest});
  Outbox(db, options).enqueue_now({.topic = "t", .key = "k"});
  CHECK(worker.run_until_idle().retried == 1);  // the second event waits behind the first
  clock->advance(std::chrono::hours(1));
  CHECK(worker.run_until_idle().dead_lettered == 1);
  const auto letters = list_dead_letters(db, {});
  REQUIRE(letters.size() == 1);
  CHECK(letters[0].reason == "exhausted");
  CHECK(replay_dead_letters(db, {}, options) == 1);
  CHECK(worker.run_until_idle().delivered == 2);
  CHECK(calls == 4);
  CHECK(db.execAndGet("SELECT count(*) FROM sluice_inbox").getInt() == 2);
}

TEST_CASE("a version 2 file keeps the attempt history it logged and logs new attempts") {
  TempDir dir;
  const std::string path = dir.file("v2.db");
  auto clock = std::make_shared<ManualClock>();
  Options options;
  options.clock = clock;
  int calls = 0;
  const auto handler = [&](const Event&, Context& ctx) {
    if (++calls == 1) ctx.retry("failed before the upgrade");
  };
  std::string id;
  {
    SQLite::Database db = open_database(path, options);
    Worker worker(db, options);
    worker.subscribe("c", "t", handler);
    id = Outbox(db, options).enqueue_now({.topic = "t"}).id;
    CHECK(worker.run_until_idle().retried == 1);
    // As version 2 logged the failure: a sluice_attempts row, no history columns.
    db.exec(R"sql(
      INSERT INTO sluice_attempts (consumer_id, event_seq, attempt, at, outcome, error)
        SELECT consumer_id, event_seq, attempts, last_failed_at, 'retry', last_error
        FROM sluice_deliveries;
      ALTER TABLE sluice_deliveries DROP COLUMN history;
      ALTER TABLE sluice_attempts DROP COLUMN earlier;
      UPDATE sluice_meta SET value = 2 WHERE name = 'schema_version';
    )sql");
    db.exec(kWithoutVersion5);
  }
  SQLite::Database db = open_database(path, options);
  CHECK(stored_schema_version(db) == schema_version());
  Worker worker(db, options);
  worker.subscribe("c", "t", handler);
  clock->advance(std::chrono::hours(1));
  CHECK(worker.run_until_idle().delivered == 1);
  const auto history = attempt_history(db, find_event(db, id));
  REQUIRE(history.size() == 2);
  CHECK(history[0].outcome == "retry");
  CHECK(history[0].attempt == 1);
  CHECK(history[0].error == "failed before the upgrade");
  CHECK(history[1].outcome == "delivered");
  CHECK(history[1].attempt == 2);
}

TEST_CASE("a version 3 file's crash suspects are claimed in the groups of version 4") {
  TempDir dir;
  const std::string path = dir.file("v3.db");
  auto clock = std::make_shared<ManualClock>();
  Options options;
  options.clock = clock;
  int calls = 0;
  const auto handler = [&](const Event&, Context&) { ++calls; };
  {
    SQLite::Database db = open_database(path, options);
    Worker(db, options).subscribe("c", "t", handler);
    Outbox(db, options).enqueue_now({.topic = "t"});
    // As version 3 left a crash suspect: retried alone (suspect = 1), indexed as one.
    db.exec(R"sql(
      INSERT INTO sluice_deliveries (consumer_id, event_seq, state, attempts, next_attempt_at,
                                     suspect, reason)
        SELECT c.id, e.seq, 'pending', 1, 0, 1, 'crashed' FROM sluice_consumers c, sluice_events e;
      UPDATE sluice_consumers SET cursor = (SELECT max(seq) FROM sluice_events);
      DROP INDEX sluice_deliveries_suspect;
      CREATE INDEX sluice_deliveries_suspect ON sluice_deliveries (consumer_id, next_attempt_at)
        WHERE suspect = 1 AND state = 'pending';
      UPDATE sluice_meta SET value = 3 WHERE name = 'schema_version';
    )sql");
    db.exec(kWithoutVersion5);
  }
  SQLite::Database db = open_database(path, options);
  CHECK(stored_schema_version(db) == schema_version());
  CHECK(db.execAndGet("SELECT sql FROM sqlite_master WHERE name = 'sluice_deliveries_suspect'")
            .getString()
            .find("suspect > 0") != std::string::npos);
  Worker worker(db, options);
  worker.subscribe("c", "t", handler);
  CHECK(worker.run_until_idle().delivered == 1);
  CHECK(calls == 1);
}

TEST_CASE("schema work refuses to run inside the caller's transaction") {
  SQLite::Database db(":memory:", SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  db.exec("BEGIN");
  CHECK_THROWS_AS(ensure_schema(db), TransactionError);
  db.exec("ROLLBACK");
  CHECK(ensure_schema(db) == 0);
  CHECK(ensure_schema(db) == schema_version());
}

TEST_CASE("a corrupt file gives a clear database error, never a crash") {
  TempDir dir;
  const std::string path = dir.file("corrupt.db");
  {
    SQLite::Database db = open_database(path);
    Outbox outbox(db);
    for (int i = 0; i < 200; ++i) outbox.enqueue_now({.topic = "t", .payload = "[1,2,3]"});
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(4096);
    const std::string junk(4096 * 6, '\x5a');
    file.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  bool raised = false;
  try {
    SQLite::Database db = open_database(path);
    db.exec("PRAGMA integrity_check");
    Outbox outbox(db);
    for (int i = 0; i < 50; ++i) outbox.enqueue_now({.topic = "t"});
    (void)consumer_stats(db);
    (void)list_events(db, {.limit = 1000});
  } catch (const Error&) {
    raised = true;
  }
  CHECK(raised);
  CHECK(std::filesystem::exists(path));
}

TEST_CASE("a version 9 file gains the index of events by ordering key") {
  TempDir dir;
  const std::string path = dir.file("v9.db");
  {
    SQLite::Database db = open_database(path);
    Outbox(db).enqueue_now({.topic = "t", .key = "k"});
    db.exec(kWithoutVersion10);
    db.exec("UPDATE sluice_meta SET value = 9 WHERE name = 'schema_version'");
  }
  SQLite::Database db = open_database(path);
  CHECK(stored_schema_version(db) == schema_version());
  CHECK(db.execAndGet("SELECT count(*) FROM sqlite_master WHERE name = 'sluice_events_key'")
            .getInt() == 1);
  CHECK(list_events(db, {.key = "k"}).size() == 1);
}

TEST_CASE("a version 4 file gains the audit log and the creation time index") {
  TempDir dir;
  const std::string path = dir.file("v4.db");
  {
    SQLite::Database db = open_database(path);
    Outbox(db).enqueue_now({.topic = "t", .key = "k"});
    db.exec(kWithoutVersion5);
    db.exec("UPDATE sluice_meta SET value = 4 WHERE name = 'schema_version'");
  }
  SQLite::Database db = open_database(path);
  CHECK(stored_schema_version(db) == schema_version());
  CHECK(db.execAndGet("SELECT count(*) FROM sqlite_master WHERE name IN ('sluice_audit', "
                      "'sluice_events_created')")
            .getInt() == 2);
  const auto id = record_audit(
      db, {.action = "prune", .filter = R"({"older_than":"7d"})", .count = 0, .source = "cli"});
  const auto entries = list_audit(db);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].id == id);
  CHECK(list_events(db, {.topic = "t", .key = "k"}).size() == 1);
}

TEST_CASE("a version 5 file gains the worker registry and ids that are never reused") {
  TempDir dir;
  const std::string path = dir.file("v5.db");
  {
    SQLite::Database db = open_database(path);
    db.exec(kWithoutVersion8);
    db.exec(R"sql(
      DROP TABLE sluice_workers;
      ALTER TABLE sluice_claims DROP COLUMN worker_id;
      DELETE FROM sluice_meta WHERE name IN ('claim_ids', 'consumer_ids');
      UPDATE sluice_meta SET value = 5 WHERE name = 'schema_version';
      INSERT INTO sluice_consumers (id, name, cursor, mode, ordered, max_attempts, retry_span_ms,
        created_at) VALUES (3, 'old', 0, 'in-transaction', 0, 5, 1000, 0);
      INSERT INTO sluice_claims (id, consumer_id, owner, pid, from_seq, to_seq, lease_until,
        created_at) VALUES (7, 3, '1:2:3', 1, 0, 0, 0, 0);
    )sql");
  }
  SQLite::Database db = open_database(path);
  CHECK(stored_schema_version(db) == schema_version());
  CHECK(db.execAndGet("SELECT value FROM sluice_meta WHERE name = 'claim_ids'").getInt64() == 7);
  CHECK(db.execAndGet("SELECT value FROM sluice_meta WHERE name = 'consumer_ids'").getInt64() == 3);
  CHECK(db.execAndGet("SELECT count(*) FROM sluice_workers").getInt() == 0);
  // The claim of before the migration names no registered worker: its liveness is its lease's.
  CHECK(db.execAndGet("SELECT worker_id IS NULL FROM sluice_claims WHERE id = 7").getInt() == 1);
}

TEST_CASE("a version 7 file's consumers learn their backoff from their next subscription") {
  TempDir dir;
  const std::string path = dir.file("v7.db");
  const auto nothing = [](const Event&, Context&) {};
  const RetryPolicy retry{.initial_backoff = std::chrono::seconds(60), .jitter = 0.0};
  {
    SQLite::Database db = open_database(path);
    Worker(db).subscribe("billing", "order", nothing, {.retry = retry});
    db.exec(kWithoutVersion8);
    db.exec("UPDATE sluice_meta SET value = 7 WHERE name = 'schema_version'");
  }
  SQLite::Database db = open_database(path);
  CHECK(stored_schema_version(db) == schema_version());
  const auto recorded = [&db] {
    return db
        .execAndGet(
            "SELECT coalesce(initial_backoff_ms, 'none') || ' ' || "
            "coalesce(backoff_jitter, 'none') FROM sluice_consumers")
        .getString();
  };
  CHECK(recorded() == "none none");
  // Nothing recorded differs from nothing: the worker of before the upgrade subscribes again.
  Worker(db).subscribe("billing", "order", nothing, {.retry = retry});
  CHECK(recorded() == "60000 0.0");
  Worker other(db);
  CHECK_THROWS_WITH_AS(other.subscribe("billing", "order", nothing),
                       doctest::Contains("initial_backoff_ms 60000 (asked 1000)"), InvalidArgument);
}
