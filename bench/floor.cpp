#include "floor.hpp"

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "raw_sqlite.hpp"
#include "stopwatch.hpp"
#include "workload.hpp"

namespace bench {
namespace {

// Shaped like sluice's own tables, with the same keys and indexes.
constexpr const char* kSchema = R"(
CREATE TABLE events(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  topic TEXT NOT NULL,
  payload TEXT NOT NULL,
  headers TEXT,
  key TEXT,
  dedup_key TEXT,
  not_before INTEGER,
  created_at INTEGER NOT NULL);
CREATE UNIQUE INDEX events_dedup ON events(topic, dedup_key) WHERE dedup_key IS NOT NULL;
CREATE INDEX events_created ON events(created_at);  -- sluice's since schema version 5
CREATE TABLE deliveries(
  event_seq INTEGER NOT NULL,
  consumer_id INTEGER NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(event_seq, consumer_id)) WITHOUT ROWID;
CREATE TABLE inbox(
  consumer_id INTEGER NOT NULL,
  event_id TEXT NOT NULL,
  seen_at INTEGER NOT NULL,
  PRIMARY KEY(consumer_id, event_id)) WITHOUT ROWID;
)";

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void configure(RawConnection& connection, const Storage& storage) {
  if (!storage.in_memory) connection.exec("PRAGMA journal_mode=WAL");
  connection.exec(storage.synchronous == sluice::Synchronous::kFull ? "PRAGMA synchronous=FULL"
                                                                    : "PRAGMA synchronous=NORMAL");
  connection.exec("PRAGMA busy_timeout=10000");
  connection.exec("PRAGMA foreign_keys=ON");
  connection.exec(kSchema);
  connection.exec(kDomainSchema);
}

// A 26-character ID like sluice's, unique within the run.
std::string event_id(long long n) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "01FLOOR%019lld", n);
  return buffer;
}

// Transactions of `batch` statements each: BEGIN IMMEDIATE, COMMIT, prepared once.
class Batches {
 public:
  Batches(RawConnection& connection, int batch)
      : begin_(connection, "BEGIN IMMEDIATE"), commit_(connection, "COMMIT"), batch_(batch) {}
  void before(long long n) {
    if (n % batch_ == 0) begin_.run();
  }
  void after(long long n, long long total) {
    if ((n + 1) % batch_ == 0 || n + 1 == total) commit_.run();
  }

 private:
  RawStatement begin_;
  RawStatement commit_;
  int batch_;
};

void insert_events(RawConnection& connection, long long events, int batch, bool with_deliveries) {
  const std::vector<std::string> payloads = sample_payloads();
  Batches batches(connection, batch);
  RawStatement insert(connection,
                      "INSERT INTO events(id, topic, payload, headers, key, dedup_key, "
                      "not_before, created_at) VALUES(?1, ?2, ?3, NULL, NULL, NULL, NULL, ?4)");
  RawStatement pending(connection,
                       "INSERT INTO deliveries(event_seq, consumer_id, state) "
                       "VALUES(?1, 1, 'pending')");
  for (long long n = 0; n < events; ++n) {
    batches.before(n);
    std::string id = event_id(n);
    insert.bind(1, id);
    insert.bind(2, kTopic);
    insert.bind(3, payloads[n % payloads.size()]);
    insert.bind(4, now_ms());
    insert.run();
    if (with_deliveries) {
      pending.bind(1, sqlite3_last_insert_rowid(connection.handle()));
      pending.run();
    }
    batches.after(n, events);
  }
}

}  // namespace

double enqueue_floor(const std::string& path, const Storage& storage, int batch, long long events) {
  RawConnection connection(path);
  configure(connection, storage);
  Stopwatch stopwatch;
  insert_events(connection, events, batch, false);
  return events / stopwatch.unstolen_seconds();
}

double delivery_floor(const std::string& path, const Storage& storage, int batch,
                      long long events) {
  RawConnection connection(path);
  configure(connection, storage);
  insert_events(connection, events, 1000, true);

  RawStatement begin(connection, "BEGIN IMMEDIATE");
  RawStatement commit(connection, "COMMIT");
  RawStatement read(connection,
                    "SELECT seq, id, topic, payload, headers, key, created_at FROM events "
                    "WHERE seq > ?1 ORDER BY seq LIMIT ?2");
  RawStatement domain(connection, kInsertDomainRow);
  RawStatement inbox(connection,
                     "INSERT INTO inbox(consumer_id, event_id, seen_at) VALUES(1, ?1, ?2)");
  RawStatement done(connection, "DELETE FROM deliveries WHERE event_seq = ?1 AND consumer_id = 1");
  Stopwatch stopwatch;
  long long delivered = 0;
  std::int64_t last_seq = 0;
  while (delivered < events) {
    long long before = delivered;
    begin.run();
    read.bind(1, last_seq);
    read.bind(2, static_cast<std::int64_t>(batch));
    while (read.step()) {
      last_seq = read.column_int(0);
      std::string_view id = read.column_text(1);
      domain.bind(1, id);
      domain.bind(2, read.column_text(3));
      domain.run();
      inbox.bind(1, id);
      inbox.bind(2, now_ms());
      inbox.run();
      done.bind(1, last_seq);
      done.run();
      ++delivered;
    }
    read.reset();
    commit.run();
    if (delivered == before) throw std::logic_error("floor: pending events went missing");
  }
  return events / stopwatch.unstolen_seconds();
}

}  // namespace bench
