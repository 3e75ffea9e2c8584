#include "sluice/backfill.hpp"

#include <SQLiteCpp/Statement.h>

#include <nlohmann/json.hpp>

#include "audit_trail.hpp"
#include "connection_clock.hpp"
#include "consumer_registry.hpp"
#include "log_to.hpp"
#include "schema.hpp"
#include "sluice/error.hpp"
#include "sql_filter.hpp"
#include "sqlite_error.hpp"
#include "time_format.hpp"
#include "write_transaction.hpp"

namespace sluice {
namespace {

constexpr int kBackfillBatch = 500;

// Events of `range` the consumer has been handed already (seq <= its cursor) and that are not
// waiting to be handled anyway. An event a worker is handling right now (claimed) is queued
// again: the worker's outcome leaves a queued row alone, so it is delivered once more after.
SqlFilter backfill_filter(SQLite::Database& db, std::int64_t consumer, const BackfillRange& range) {
  if (range.from_event_id.empty() == !range.since.has_value()) {
    throw InvalidArgument("sluice: backfill: give exactly one of a start event ID or a start time");
  }
  SqlFilter sql;
  sql.where("s.consumer_id = ?", {consumer});
  if (!range.from_event_id.empty()) {
    SQLite::Statement find(db, "SELECT seq FROM sluice_events WHERE id = ?");
    find.bind(1, range.from_event_id);
    if (!find.executeStep()) {
      throw NotFound("sluice: backfill: no event with ID '" + range.from_event_id + "'");
    }
    sql.where("e.seq >= ?", {find.getColumn(0).getInt64()});
  } else {
    sql.where("e.created_at >= ?", {to_millis(*range.since)});
    // The first seq created since then, from sluice_events_created (min(+seq): not by walking
    // seq order to the first match), so a recent `since` does not read the whole file.
    sql.where(
        "e.seq >= (SELECT coalesce(min(+seq), 9223372036854775807) FROM sluice_events WHERE "
        "created_at >= ?)",
        {to_millis(*range.since)});
  }
  if (range.until) sql.where("e.created_at < ?", {to_millis(*range.until)});
  sql.where("e.seq <= (SELECT cursor FROM sluice_consumers WHERE id = s.consumer_id)");
  sql.where(
      "NOT EXISTS (SELECT 1 FROM sluice_deliveries d WHERE d.consumer_id = s.consumer_id AND "
      "d.event_seq = e.seq AND d.state = 'pending')");
  return sql;
}

const char* const kPendingFrom =
    " FROM sluice_events e JOIN sluice_subscriptions s ON s.topic = e.topic AND "
    "e.seq > s.start_seq WHERE 1";

}  // namespace

long long count_backfill(SQLite::Database& db, const std::string& consumer,
                         const BackfillRange& range) {
  return guarded("count backfill", [&] {
    const SqlFilter sql = backfill_filter(db, consumer_id(db, consumer), range);
    SQLite::Statement count(db, std::string("SELECT count(*)") + kPendingFrom + sql.clause());
    sql.bind(count);
    count.executeStep();
    return count.getColumn(0).getInt64();
  });
}

long long backfill(SQLite::Database& db, const std::string& consumer, const BackfillRange& range,
                   const Options& options) {
  AuditEntry audit;
  return backfill(db, consumer, range, options, audit);
}

long long backfill(SQLite::Database& db, const std::string& consumer, const BackfillRange& range,
                   const Options& options, AuditEntry& audit) {
  nlohmann::json record{{"consumer", consumer}};
  if (!range.from_event_id.empty()) record["from_event"] = range.from_event_id;
  if (range.since) record["since"] = format_rfc3339(*range.since);
  if (range.until) record["until"] = format_rfc3339(*range.until);
  audit.action = "backfill";
  AuditTrail trail(audit, record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return guarded("backfill", [&] {
    const auto clock = clock_for(db, options);
    const std::int64_t id = consumer_id(db, consumer);
    const SqlFilter sql = backfill_filter(db, id, range);
    long long queued = 0;
    std::int64_t after = 0;
    while (true) {
      WriteTransaction tx(db);
      const TimePoint now = clock->now();
      SQLite::Statement select(
          db, std::string("SELECT e.seq, e.id, e.key, e.not_before") + kPendingFrom + sql.clause() +
                  " AND e.seq > ? ORDER BY e.seq LIMIT " + std::to_string(kBackfillBatch));
      const int next = sql.bind(select);
      select.bind(next, static_cast<int64_t>(after));
      SQLite::Statement forget(db,
                               "DELETE FROM sluice_inbox WHERE consumer_id = ? AND event_id = ?");
      SQLite::Statement queue(
          db,
          // Due at once (schema::kDueAtOnce), but never before its own not-before time, which
          // a clock set back since it was first delivered may have put ahead again.
          "INSERT INTO sluice_deliveries (consumer_id, event_seq, state, key, attempts, "
          "next_attempt_at, scheduled_at, reason) VALUES (?1, ?2, 'pending', ?3, 0, ?4, 0, "
          "'backfilled') ON CONFLICT (consumer_id, event_seq) DO UPDATE SET state = 'pending', "
          "attempts = 0, next_attempt_at = ?4, scheduled_at = 0, suspect = 0, claim_id = NULL, "
          "reason = 'backfilled'");
      SQLite::Statement history(db,
                                "INSERT INTO sluice_attempts (consumer_id, event_seq, attempt, "
                                "at, outcome) VALUES (?, ?, 0, ?, 'backfilled')");
      int rows = 0;
      while (select.executeStep()) {
        const std::int64_t seq = select.getColumn(0).getInt64();
        forget.reset();
        forget.bind(1, static_cast<int64_t>(id));
        forget.bind(2, select.getColumn(1).getString());
        forget.exec();
        queue.reset();
        queue.bind(1, static_cast<int64_t>(id));
        queue.bind(2, static_cast<int64_t>(seq));
        if (select.getColumn(2).isNull()) {
          queue.bind(3);
        } else {
          queue.bind(3, select.getColumn(2).getString());
        }
        queue.bind(4, select.getColumn(3).isNull()
                          ? static_cast<int64_t>(to_millis(schema::kDueAtOnce))
                          : select.getColumn(3).getInt64());
        queue.exec();
        history.reset();
        history.bind(1, static_cast<int64_t>(id));
        history.bind(2, static_cast<int64_t>(seq));
        history.bind(3, static_cast<int64_t>(to_millis(now)));
        history.exec();
        after = seq;
        ++rows;
      }
      // A worker holding a claim made before this sees the count change and gives back what it
      // has not started, so each event is delivered once more, in order (see deliverer.cpp).
      if (rows > 0) {
        db.exec(
            "INSERT INTO sluice_meta (name, value) VALUES ('backfills', 1) "
            "ON CONFLICT (name) DO UPDATE SET value = value + 1");
        trail.record(db, rows, now);
      }
      tx.commit();
      trail.committed();
      queued += rows;
      if (rows < kBackfillBatch) break;
    }
    trail.finish(db, clock->now());
    log_to(options, LogLevel::kInfo, "backfill queued",
           {{"consumer", consumer}, {"events", queued}});
    return queued;
  });
}

}  // namespace sluice
