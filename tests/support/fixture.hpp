// Shared setup for library tests: a database (file or :memory:), a manual clock, an app table.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <memory>
#include <string>

#include "sluice/sluice.hpp"
#include "temp_dir.hpp"

namespace sluice::test {

inline Options test_options(std::shared_ptr<ManualClock> clock) {
  Options options;
  options.clock = std::move(clock);
  options.synchronous = Synchronous::kNormal;
  options.retry.initial_backoff = std::chrono::seconds(1);
  options.retry.jitter = 0;
  options.retry.max_attempts = 3;
  return options;
}

// Counts rows of `table` matching `where`.
inline long long count(SQLite::Database& db, const std::string& table,
                       const std::string& where = "1") {
  return db.execAndGet("SELECT count(*) FROM " + table + " WHERE " + where).getInt64();
}

// Counts the attempts with `outcome` in the history of every retained event.
inline long long count_attempts(SQLite::Database& db, const std::string& outcome) {
  long long found = 0;
  for (const Event& event : list_events(db, {.limit = 1'000'000})) {
    for (const AttemptRecord& attempt : attempt_history(db, event)) {
      if (attempt.outcome == outcome) ++found;
    }
  }
  return found;
}

struct Fixture {
  explicit Fixture(bool on_file = false)
      : clock(std::make_shared<ManualClock>()),
        options(test_options(clock)),
        db(open_database(on_file ? dir.file("app.db") : ":memory:", options)),
        outbox(db, options) {
    db.exec("CREATE TABLE applied (event_id TEXT NOT NULL, consumer TEXT NOT NULL, note TEXT)");
  }

  EnqueueResult publish(const std::string& topic, const std::string& payload = "{}",
                        const std::string& key = {}) {
    NewEvent event;
    event.topic = topic;
    event.payload = payload;
    event.key = key;
    return outbox.enqueue_now(event);
  }

  TempDir dir;
  std::shared_ptr<ManualClock> clock;
  Options options;
  SQLite::Database db;
  Outbox outbox;
};

// A handler that records each event it applies in the app table `applied`.
inline Handler recording(const std::string& consumer) {
  return [consumer](const Event& event, Context& ctx) {
    SQLite::Statement insert(ctx.db(), "INSERT INTO applied (event_id, consumer) VALUES (?, ?)");
    insert.bind(1, event.id);
    insert.bind(2, consumer);
    insert.exec();
  };
}

}  // namespace sluice::test
