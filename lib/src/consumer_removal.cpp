#include "sluice/consumer_removal.hpp"

#include <SQLiteCpp/Statement.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include "audit_trail.hpp"
#include "claim_book.hpp"
#include "connection_clock.hpp"
#include "consumer_registry.hpp"
#include "log_to.hpp"
#include "sluice/error.hpp"
#include "sqlite_error.hpp"
#include "time_format.hpp"
#include "write_transaction.hpp"

namespace sluice {
namespace {

// Rows deleted per short transaction, so removing a consumer with a long history never holds the
// write lock for long while the app runs.
constexpr int kRemovalBatch = 1000;

long long count_rows(SQLite::Database& db, const std::string& sql, std::int64_t consumer) {
  SQLite::Statement query(db, sql);
  query.bind(1, static_cast<int64_t>(consumer));
  query.executeStep();
  return query.getColumn(0).getInt64();
}

// The newest time any worker of `consumer` left a trace: a seen ID, a failure or retry, a
// claim, or the consumer's creation.
std::optional<TimePoint> last_active(SQLite::Database& db, std::int64_t consumer) {
  SQLite::Statement query(
      db,
      "SELECT max(coalesce((SELECT max(delivered_at) FROM sluice_inbox WHERE consumer_id = ?1), "
      "0), coalesce((SELECT max(max(coalesce(last_failed_at, 0), scheduled_at)) FROM "
      "sluice_deliveries WHERE consumer_id = ?1), 0), coalesce((SELECT max(created_at) FROM "
      "sluice_claims WHERE consumer_id = ?1), 0), created_at) FROM sluice_consumers WHERE id = ?1");
  query.bind(1, static_cast<int64_t>(consumer));
  query.executeStep();
  const std::int64_t at = query.getColumn(0).getInt64();
  if (at <= 0) return std::nullopt;
  return TimePoint(Duration(at));
}

// Why a worker of `consumer` looks alive, or "" when none does.
std::string live_worker(SQLite::Database& db, std::int64_t consumer, const ConsumerRemoval& found,
                        const RemoveConsumerOptions& removal, TimePoint now) {
  SQLite::Statement claims(
      db,
      "SELECT c.owner, c.pid, c.lease_until, c.worker_id, w.locked FROM sluice_claims c LEFT JOIN "
      "sluice_workers w ON w.id = c.worker_id WHERE c.consumer_id = ?");
  claims.bind(1, static_cast<int64_t>(consumer));
  const char* file = sqlite3_db_filename(db.getHandle(), "main");
  ClaimLiveness liveness(file != nullptr ? file : "");
  while (claims.executeStep()) {
    ClaimLiveness::Owner owner{.owner = claims.getColumn(0).getString(),
                               .lease_until = TimePoint(Duration(claims.getColumn(2).getInt64()))};
    if (!claims.getColumn(3).isNull()) owner.worker_id = claims.getColumn(3).getInt64();
    if (!claims.getColumn(4).isNull()) owner.locked = claims.getColumn(4).getInt() != 0;
    if (!liveness.abandoned(owner, now)) {
      return "a claim of process " + std::to_string(claims.getColumn(1).getInt64()) +
             ", which still runs or whose lease has not run out";
    }
  }
  if (found.last_active && now - *found.last_active < removal.active_within) {
    return "it was active at " + format_rfc3339(*found.last_active) + ", less than " +
           format_duration(removal.active_within) + " ago";
  }
  return {};
}

// Deletes the rows of `consumer` kRemovalBatch per transaction through `batch_delete` (?1 the
// consumer, ?2 the batch size) until none is left. For tables keyed by consumer first. Each
// transaction brings `audit` up to date, counting the rows deleted when `counted`.
void delete_in_batches(SQLite::Database& db, const std::string& batch_delete, std::int64_t consumer,
                       AuditTrail& audit, bool counted, const Clock& clock) {
  while (true) {
    WriteTransaction tx(db);
    SQLite::Statement remove(db, batch_delete);
    remove.bind(1, static_cast<int64_t>(consumer));
    remove.bind(2, kRemovalBatch);
    const int removed = remove.exec();
    audit.record(db, counted ? removed : 0, clock.now());
    tx.commit();
    audit.committed();
    if (removed < kRemovalBatch) return;
  }
}

// Deletes the attempt history of `consumer` kRemovalBatch rows per transaction. The table has no
// index by consumer, so each batch walks on by id from where the last one ended.
void delete_attempts(SQLite::Database& db, std::int64_t consumer) {
  std::int64_t after = 0;
  while (true) {
    WriteTransaction tx(db);
    SQLite::Statement last(db,
                           "SELECT count(*), max(id) FROM (SELECT id FROM sluice_attempts WHERE "
                           "consumer_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3)");
    last.bind(1, static_cast<int64_t>(consumer));
    last.bind(2, static_cast<int64_t>(after));
    last.bind(3, kRemovalBatch);
    last.executeStep();
    const long long rows = last.getColumn(0).getInt64();
    if (rows == 0) return;
    const std::int64_t through = last.getColumn(1).getInt64();
    SQLite::Statement remove(
        db, "DELETE FROM sluice_attempts WHERE consumer_id = ?1 AND id > ?2 AND id <= ?3");
    remove.bind(1, static_cast<int64_t>(consumer));
    remove.bind(2, static_cast<int64_t>(after));
    remove.bind(3, static_cast<int64_t>(through));
    remove.exec();
    tx.commit();
    after = through;
    if (rows < kRemovalBatch) return;
  }
}

}  // namespace

ConsumerRemoval remove_consumer(SQLite::Database& db, const std::string& name,
                                const RemoveConsumerOptions& removal, const Options& options) {
  AuditEntry audit;
  return remove_consumer(db, name, removal, options, audit);
}

ConsumerRemoval remove_consumer(SQLite::Database& db, const std::string& name,
                                const RemoveConsumerOptions& removal, const Options& options,
                                AuditEntry& audit) {
  audit.action = "remove";
  nlohmann::json record{{"consumer", name}};
  if (removal.force) record["force"] = true;
  AuditTrail trail(audit, record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return guarded("remove consumer", [&] {
    const auto clock = clock_for(db, options);
    const std::int64_t id = consumer_id(db, name);
    ConsumerRemoval found;
    found.consumer = name;
    {
      SQLite::Statement topics(
          db, "SELECT topic FROM sluice_subscriptions WHERE consumer_id = ? ORDER BY topic");
      topics.bind(1, static_cast<int64_t>(id));
      while (topics.executeStep()) found.topics.push_back(topics.getColumn(0).getString());
    }
    found.deliveries =
        count_rows(db, "SELECT count(*) FROM sluice_deliveries WHERE consumer_id = ?", id);
    found.dead_letters = count_rows(
        db, "SELECT count(*) FROM sluice_deliveries WHERE consumer_id = ? AND state = 'dead'", id);
    found.inbox = count_rows(db, "SELECT count(*) FROM sluice_inbox WHERE consumer_id = ?", id);
    found.claims = count_rows(db, "SELECT count(*) FROM sluice_claims WHERE consumer_id = ?", id);
    found.attempts =
        count_rows(db, "SELECT count(*) FROM sluice_attempts WHERE consumer_id = ?", id);
    found.last_active = last_active(db, id);
    if (!removal.force) {
      found.live_worker = live_worker(db, id, found, removal, clock->now());
      if (!found.live_worker.empty() && !removal.dry_run) {
        throw InvalidArgument("sluice: remove consumer: a worker of '" + name + "' looks alive (" +
                              found.live_worker +
                              "): stop its workers first, or force the removal");
      }
    }
    if (removal.dry_run) return found;
    // The entry is written with the first deletion: a removal cut short is on record too.
    delete_in_batches(db,
                      "DELETE FROM sluice_inbox WHERE consumer_id = ?1 AND event_id IN (SELECT "
                      "event_id FROM sluice_inbox WHERE consumer_id = ?1 LIMIT ?2)",
                      id, trail, false, *clock);
    delete_in_batches(db,
                      "DELETE FROM sluice_deliveries WHERE consumer_id = ?1 AND event_seq IN "
                      "(SELECT event_seq FROM sluice_deliveries WHERE consumer_id = ?1 LIMIT ?2)",
                      id, trail, true, *clock);
    delete_attempts(db, id);
    // Whatever a worker wrote meanwhile goes with the consumer row, in one transaction.
    WriteTransaction tx(db);
    long long late_deliveries = 0;
    for (const char* table : {"sluice_inbox", "sluice_deliveries", "sluice_attempts",
                              "sluice_claims", "sluice_subscriptions"}) {
      SQLite::Statement remove(db, std::string("DELETE FROM ") + table + " WHERE consumer_id = ?");
      remove.bind(1, static_cast<int64_t>(id));
      const int removed = remove.exec();
      if (std::string(table) == "sluice_deliveries") late_deliveries = removed;
    }
    SQLite::Statement consumer(db, "DELETE FROM sluice_consumers WHERE id = ?");
    consumer.bind(1, static_cast<int64_t>(id));
    consumer.exec();
    trail.record(db, late_deliveries, clock->now());
    tx.commit();
    trail.committed();
    found.removed = true;
    log_to(options, LogLevel::kInfo, "consumer removed",
           {{"consumer", name},
            {"deliveries", found.deliveries},
            {"dead_letters", found.dead_letters},
            {"inbox", found.inbox},
            {"attempts", found.attempts}});
    return found;
  });
}

}  // namespace sluice
