#include "floor.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
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
CREATE INDEX events_key ON events(key) WHERE key IS NOT NULL;  -- since schema version 10
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

std::unique_ptr<RawConnection> configured(const std::string& path, const Storage& storage) {
  auto connection = std::make_unique<RawConnection>(path);
  if (!storage.in_memory) connection->exec("PRAGMA journal_mode=WAL");
  connection->exec(storage.synchronous == sluice::Synchronous::kFull ? "PRAGMA synchronous=FULL"
                                                                     : "PRAGMA synchronous=NORMAL");
  connection->exec("PRAGMA busy_timeout=10000");
  connection->exec("PRAGMA foreign_keys=ON");
  connection->exec(kSchema);
  connection->exec(kDomainSchema);
  return connection;
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

// Inserts events numbered from `first`, `batch` per transaction, each with a pending delivery
// row if `with_deliveries`.
class EventInserter {
 public:
  EventInserter(RawConnection& connection, int batch, bool with_deliveries)
      : connection_(connection),
        batches_(connection, batch),
        insert_(connection,
                "INSERT INTO events(id, topic, payload, headers, key, dedup_key, "
                "not_before, created_at) VALUES(?1, ?2, ?3, NULL, NULL, NULL, NULL, ?4)"),
        pending_(connection,
                 "INSERT INTO deliveries(event_seq, consumer_id, state) VALUES(?1, 1, 'pending')"),
        with_deliveries_(with_deliveries),
        payloads_(sample_payloads()) {}

  void insert(long long events) {
    for (long long n = 0; n < events; ++n) {
      batches_.before(n);
      const std::string id = event_id(next_ + n);
      insert_.bind(1, id);
      insert_.bind(2, kTopic);
      insert_.bind(3, payloads_[(next_ + n) % payloads_.size()]);
      insert_.bind(4, now_ms());
      insert_.run();
      if (with_deliveries_) {
        pending_.bind(1, sqlite3_last_insert_rowid(connection_.handle()));
        pending_.run();
      }
      batches_.after(n, events);
    }
    next_ += events;
  }

 private:
  RawConnection& connection_;
  Batches batches_;
  RawStatement insert_;
  RawStatement pending_;
  bool with_deliveries_;
  std::vector<std::string> payloads_;
  long long next_ = 0;
};

class EnqueueFloor final : public Side {
 public:
  EnqueueFloor(const std::string& path, const Storage& storage, int batch)
      : connection_(configured(path, storage)), inserter_(*connection_, batch, false) {}
  void prepare(long long) override {}
  double run(long long events) override {
    Stopwatch stopwatch;
    inserter_.insert(events);
    return stopwatch.unstolen_seconds();
  }

 private:
  std::unique_ptr<RawConnection> connection_;
  EventInserter inserter_;
};

class DeliveryFloor final : public Side {
 public:
  DeliveryFloor(const std::string& path, const Storage& storage, int batch)
      : connection_(configured(path, storage)),
        backlog_(*connection_, 1000, true),
        batch_(batch),
        begin_(*connection_, "BEGIN IMMEDIATE"),
        commit_(*connection_, "COMMIT"),
        read_(*connection_,
              "SELECT seq, id, topic, payload, headers, key, created_at FROM events "
              "WHERE seq > ?1 ORDER BY seq LIMIT ?2"),
        domain_(*connection_, kInsertDomainRow),
        inbox_(*connection_, "INSERT INTO inbox(consumer_id, event_id, seen_at) VALUES(1, ?1, ?2)"),
        done_(*connection_, "DELETE FROM deliveries WHERE event_seq = ?1 AND consumer_id = 1") {}

  void prepare(long long events) override { backlog_.insert(events); }

  double run(long long events) override {
    Stopwatch stopwatch;
    long long delivered = 0;
    while (delivered < events) {
      const long long before = delivered;
      begin_.run();
      read_.bind(1, last_seq_);
      read_.bind(2, static_cast<std::int64_t>(batch_));
      while (read_.step()) {
        last_seq_ = read_.column_int(0);
        std::string_view id = read_.column_text(1);
        domain_.bind(1, id);
        domain_.bind(2, read_.column_text(3));
        domain_.run();
        inbox_.bind(1, id);
        inbox_.bind(2, now_ms());
        inbox_.run();
        done_.bind(1, last_seq_);
        done_.run();
        ++delivered;
      }
      read_.reset();
      commit_.run();
      if (delivered == before) throw std::logic_error("floor: pending events went missing");
    }
    return stopwatch.unstolen_seconds();
  }

 private:
  std::unique_ptr<RawConnection> connection_;
  EventInserter backlog_;
  int batch_;
  RawStatement begin_;
  RawStatement commit_;
  RawStatement read_;
  RawStatement domain_;
  RawStatement inbox_;
  RawStatement done_;
  std::int64_t last_seq_ = 0;
};

}  // namespace

std::unique_ptr<Side> enqueue_floor(const std::string& path, const Storage& storage, int batch) {
  return std::make_unique<EnqueueFloor>(path, storage, batch);
}

std::unique_ptr<Side> delivery_floor(const std::string& path, const Storage& storage, int batch) {
  return std::make_unique<DeliveryFloor>(path, storage, batch);
}

}  // namespace bench
