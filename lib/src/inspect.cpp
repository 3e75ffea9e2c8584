#include "sluice/inspect.hpp"

#include <SQLiteCpp/Statement.h>

#include <cstdint>
#include <set>

#include "consumer_registry.hpp"
#include "event_codec.hpp"
#include "sluice/error.hpp"
#include "sql_filter.hpp"
#include "sqlite_error.hpp"
#include "time_format.hpp"

namespace sluice {
namespace {

// One consumer's state for event `e`, given its consumer row `c`, its delivery row `d` and its
// inbox row `i` (both LEFT JOINed).
const char* const kStateExpression =
    "CASE "
    "WHEN d.state IN ('dead', 'discarded', 'claimed') THEN d.state "
    "WHEN d.state = 'pending' AND d.reason IN ('retry', 'crashed') THEN 'retrying' "
    "WHEN d.state = 'pending' THEN 'pending' "
    "WHEN i.event_id IS NOT NULL THEN 'delivered' "
    "WHEN e.seq > c.cursor THEN 'pending' "
    "WHEN EXISTS (SELECT 1 FROM sluice_claims k WHERE k.consumer_id = c.id AND "
    "e.seq > k.from_seq AND e.seq <= k.to_seq) THEN 'claimed' "
    "ELSE 'delivered' END";

const char* const kConsumerJoins =
    " JOIN sluice_subscriptions s ON s.topic = e.topic AND e.seq > s.start_seq "
    "JOIN sluice_consumers c ON c.id = s.consumer_id "
    "LEFT JOIN sluice_deliveries d ON d.consumer_id = c.id AND d.event_seq = e.seq "
    "LEFT JOIN sluice_inbox i ON i.consumer_id = c.id AND i.event_id = e.id";

// Every attempt of event ?1: the settled rows of sluice_attempts with the attempts they settled
// (`earlier`), and the history of the delivery rows still open (see schema version 3). Ties in
// time (a manual clock) go by attempt, failures before operator actions before settlements.
const char* const kAttemptHistory =
    "SELECT name, attempt, at, outcome, error FROM ("
    "SELECT a.consumer_id, json_extract(h.value, '$[0]') AS attempt, "
    "json_extract(h.value, '$[1]') AS at, json_extract(h.value, '$[2]') AS outcome, "
    "json_extract(h.value, '$[3]') AS error FROM sluice_attempts a, json_each(a.earlier) h "
    "WHERE a.event_seq = ?1 "
    "UNION ALL SELECT consumer_id, attempt, at, outcome, error FROM sluice_attempts "
    "WHERE event_seq = ?1 "
    "UNION ALL SELECT d.consumer_id, json_extract(h.value, '$[0]'), json_extract(h.value, '$[1]'), "
    "json_extract(h.value, '$[2]'), json_extract(h.value, '$[3]') "
    "FROM sluice_deliveries d, json_each(d.history) h WHERE d.event_seq = ?1"
    ") JOIN sluice_consumers c ON c.id = consumer_id ORDER BY at, attempt, CASE outcome "
    "WHEN 'replayed' THEN 1 WHEN 'discarded' THEN 1 WHEN 'backfilled' THEN 1 "
    "WHEN 'delivered' THEN 2 WHEN 'seen' THEN 2 ELSE 0 END";

const std::set<std::string>& known_states() {
  static const std::set<std::string> states = {"pending",   "claimed", "retrying",
                                               "delivered", "dead",    "discarded"};
  return states;
}

}  // namespace

std::vector<Event> list_events(SQLite::Database& db, const EventFilter& filter) {
  if (!filter.state.empty() && filter.consumer.empty()) {
    throw InvalidArgument("sluice: list events: a state filter needs a consumer");
  }
  if (!filter.state.empty() && known_states().count(filter.state) == 0) {
    throw InvalidArgument("sluice: list events: unknown state '" + filter.state +
                          "' (pending, claimed, retrying, delivered, dead, discarded)");
  }
  if (filter.limit < 1) throw InvalidArgument("sluice: list events: the limit must be >= 1");
  return guarded("list events", [&] {
    SqlFilter sql;
    std::string from = " FROM sluice_events e";
    if (!filter.consumer.empty()) {
      from += kConsumerJoins;
      sql.where("c.id = ?", {consumer_id(db, filter.consumer)});
      if (!filter.state.empty()) {
        sql.where(std::string(kStateExpression) + " = ?", {filter.state});
      }
    }
    sql.where("e.seq > ?", {filter.after_seq});
    if (filter.before_seq > 0) sql.where("e.seq < ?", {filter.before_seq});
    if (!filter.topic.empty()) sql.where("e.topic = ?", {filter.topic});
    if (!filter.key.empty()) sql.where("e.key = ?", {filter.key});
    if (!filter.event_id.empty()) sql.where("e.id = ?", {filter.event_id});
    if (!filter.dedup_key.empty()) sql.where("e.dedup_key = ?", {filter.dedup_key});
    const bool time_only = filter.consumer.empty() && filter.topic.empty() && filter.key.empty() &&
                           filter.event_id.empty() && filter.dedup_key.empty();
    if (time_only && (filter.since || filter.until)) {
      // Seq order within a time range from the creation time index alone (no table reads), then
      // the page's rows. Left to itself the planner walked the table from after_seq for a lone
      // `since`: the whole file before the last hour's events.
      // An upper seq bound only when asked for: an unbounded one turned the plan to a walk of
      // the table by seq.
      std::vector<SqlFilter::Value> values{filter.since ? to_millis(*filter.since) : INT64_MIN,
                                           filter.until ? to_millis(*filter.until) : INT64_MAX,
                                           filter.after_seq};
      if (filter.before_seq > 0) values.emplace_back(filter.before_seq);
      sql.where(
          "e.seq IN (SELECT seq FROM sluice_events WHERE created_at >= ? AND created_at < ? AND "
          "seq > ?" +
              std::string(filter.before_seq > 0 ? " AND seq < ?" : "") + " ORDER BY seq" +
              (filter.newest_first ? " DESC" : "") + " LIMIT " + std::to_string(filter.limit) + ")",
          std::move(values));
    } else {
      // With other filters, by seq between the first and last seq of the range, which
      // sluice_events_created gives exactly (min(+seq): not by walking seq order to a match).
      if (filter.since) {
        sql.where("e.created_at >= ?", {to_millis(*filter.since)});
        sql.where(
            "e.seq >= (SELECT coalesce(min(+seq), 9223372036854775807) FROM "
            "sluice_events WHERE created_at >= ?)",
            {to_millis(*filter.since)});
      }
      if (filter.until) {
        sql.where("e.created_at < ?", {to_millis(*filter.until)});
        sql.where(
            "e.seq <= (SELECT coalesce(max(+seq), 0) FROM sluice_events WHERE "
            "created_at < ?)",
            {to_millis(*filter.until)});
      }
    }
    SQLite::Statement select(db, std::string("SELECT ") + kEventColumns + from + " WHERE 1" +
                                     sql.clause() + " ORDER BY e.seq" +
                                     (filter.newest_first ? " DESC" : "") + " LIMIT " +
                                     std::to_string(filter.limit));
    sql.bind(select);
    std::vector<Event> events;
    while (select.executeStep()) events.push_back(read_event(select));
    return events;
  });
}

Event find_event(SQLite::Database& db, const std::string& event_id) {
  return guarded("find event", [&] {
    SQLite::Statement select(
        db, std::string("SELECT ") + kEventColumns + " FROM sluice_events e WHERE e.id = ?");
    select.bind(1, event_id);
    if (!select.executeStep()) throw NotFound("sluice: no event with ID '" + event_id + "'");
    return read_event(select);
  });
}

std::vector<DeliveryStatus> delivery_statuses(SQLite::Database& db, const Event& event) {
  return guarded("read delivery status", [&] {
    SQLite::Statement select(
        db, std::string("SELECT c.name, ") + kStateExpression +
                ", coalesce(d.attempts, CASE WHEN i.event_id IS NOT NULL THEN 1 ELSE 0 END), "
                "CASE WHEN d.state = 'pending' THEN max(d.next_attempt_at, e.created_at) END, "
                "i.delivered_at, "
                "d.last_error FROM sluice_events e" +
                kConsumerJoins + " WHERE e.seq = ? ORDER BY c.name");
    select.bind(1, static_cast<int64_t>(event.seq));
    std::vector<DeliveryStatus> statuses;
    while (select.executeStep()) {
      DeliveryStatus status;
      status.consumer = select.getColumn(0).getString();
      status.state = select.getColumn(1).getString();
      status.attempts = select.getColumn(2).getInt();
      if (!select.getColumn(3).isNull()) {
        status.next_attempt_at = TimePoint(Duration(select.getColumn(3).getInt64()));
      }
      if (!select.getColumn(4).isNull()) {
        status.delivered_at = TimePoint(Duration(select.getColumn(4).getInt64()));
      }
      status.last_error = select.getColumn(5).getString();
      statuses.push_back(std::move(status));
    }
    return statuses;
  });
}

std::vector<std::string> late_subscribers(SQLite::Database& db, const Event& event) {
  return guarded("read subscriptions", [&] {
    SQLite::Statement select(db,
                             "SELECT c.name FROM sluice_subscriptions s JOIN sluice_consumers c "
                             "ON c.id = s.consumer_id WHERE s.topic = ? AND s.start_seq >= ? "
                             "ORDER BY c.name");
    select.bind(1, event.topic);
    select.bind(2, static_cast<int64_t>(event.seq));
    std::vector<std::string> names;
    while (select.executeStep()) names.push_back(select.getColumn(0).getString());
    return names;
  });
}

std::vector<AttemptRecord> attempt_history(SQLite::Database& db, const Event& event) {
  return guarded("read attempt history", [&] {
    SQLite::Statement select(db, kAttemptHistory);
    select.bind(1, static_cast<int64_t>(event.seq));
    std::vector<AttemptRecord> history;
    while (select.executeStep()) {
      AttemptRecord record;
      record.consumer = select.getColumn(0).getString();
      record.attempt = select.getColumn(1).getInt();
      record.at = TimePoint(Duration(select.getColumn(2).getInt64()));
      record.outcome = select.getColumn(3).getString();
      record.error = select.getColumn(4).getString();
      history.push_back(std::move(record));
    }
    return history;
  });
}

std::int64_t newest_event_seq(SQLite::Database& db) {
  return guarded("read newest event", [&] {
    return db.execAndGet("SELECT coalesce(max(seq), 0) FROM sluice_events").getInt64();
  });
}

long long claims_past_lease(SQLite::Database& db, TimePoint now) {
  return guarded("count claims past their lease", [&] {
    SQLite::Statement query(db, "SELECT count(*) FROM sluice_claims WHERE lease_until < ?");
    query.bind(1, static_cast<std::int64_t>(to_millis(now)));
    query.executeStep();
    return query.getColumn(0).getInt64();
  });
}

}  // namespace sluice
