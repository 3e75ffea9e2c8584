#include "sluice/inspect.hpp"

#include <SQLiteCpp/Statement.h>

#include <cstdint>
#include <optional>
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

// A time range's events are mostly a run of seqs (events are created in seq order; only a clock
// set back mixes them), so the first kTimeWindow events from a page's start, walked by seq,
// answer most pages in a few milliseconds; the creation time index answers from where the window
// ends. The index alone sorted every match by seq: 90 ms for "the last week" of 1M events.
constexpr std::int64_t kTimeWindow = 20'000;

std::vector<Event> select_events(SQLite::Database& db, const std::string& from,
                                 const SqlFilter& sql, const EventFilter& filter) {
  SQLite::Statement select(db, std::string("SELECT ") + kEventColumns + from + " WHERE 1" +
                                   sql.clause() + " ORDER BY e.seq" +
                                   (filter.newest_first ? " DESC" : "") + " LIMIT " +
                                   std::to_string(filter.limit));
  sql.bind(select);
  std::vector<Event> events;
  while (select.executeStep()) events.push_back(read_event(select));
  return events;
}

void where_seq_bounds(SqlFilter& sql, const EventFilter& filter) {
  sql.where("e.seq > ?", {filter.after_seq});
  if (filter.before_seq > 0) sql.where("e.seq < ?", {filter.before_seq});
}

// A time range alone, through the creation time index: seq order within the range from the
// index alone (no table reads), then the page's rows. Left to itself the planner walked the
// table from after_seq for a lone `since` (the whole file before the last hour's events), and by
// seq whenever the range had an upper seq bound: hence INDEXED BY.
std::vector<Event> by_creation_index(SQLite::Database& db, const EventFilter& filter) {
  SqlFilter sql;
  where_seq_bounds(sql, filter);
  std::vector<SqlFilter::Value> values{filter.since ? to_millis(*filter.since) : INT64_MIN,
                                       filter.until ? to_millis(*filter.until) : INT64_MAX,
                                       filter.after_seq};
  if (filter.before_seq > 0) values.emplace_back(filter.before_seq);
  sql.where(
      "e.seq IN (SELECT seq FROM sluice_events INDEXED BY sluice_events_created WHERE "
      "created_at >= ? AND created_at < ? AND "
      "seq > ?" +
          std::string(filter.before_seq > 0 ? " AND seq < ?" : "") + " ORDER BY seq" +
          (filter.newest_first ? " DESC" : "") + " LIMIT " + std::to_string(filter.limit) + ")",
      std::move(values));
  return select_events(db, " FROM sluice_events e", sql, filter);
}

// The seq kTimeWindow events from the page's start, in the page's direction; none when fewer
// remain.
std::optional<std::int64_t> window_end(SQLite::Database& db, const EventFilter& filter) {
  SQLite::Statement query(
      db, std::string("SELECT seq FROM sluice_events WHERE seq > ? AND seq < ? ORDER BY seq") +
              (filter.newest_first ? " DESC" : "") + " LIMIT 1 OFFSET ?");
  query.bind(1, static_cast<int64_t>(filter.after_seq));
  query.bind(2, static_cast<int64_t>(filter.before_seq > 0 ? filter.before_seq : INT64_MAX));
  query.bind(3, static_cast<int64_t>(kTimeWindow - 1));
  if (!query.executeStep()) return std::nullopt;
  return query.getColumn(0).getInt64();
}

// A time range alone: the window by seq (`+created_at` keeps the planner on seq), then, for a
// page it did not fill, the creation time index from the window's end.
std::vector<Event> by_time_range(SQLite::Database& db, const EventFilter& filter) {
  const std::optional<std::int64_t> end = window_end(db, filter);
  SqlFilter window;
  where_seq_bounds(window, filter);
  if (end) window.where(filter.newest_first ? "e.seq >= ?" : "e.seq <= ?", {*end});
  if (filter.since) window.where("+e.created_at >= ?", {to_millis(*filter.since)});
  if (filter.until) window.where("+e.created_at < ?", {to_millis(*filter.until)});
  std::vector<Event> events = select_events(db, " FROM sluice_events e", window, filter);
  if (!end || static_cast<int>(events.size()) == filter.limit) return events;
  EventFilter rest = filter;
  (filter.newest_first ? rest.before_seq : rest.after_seq) = *end;
  rest.limit = filter.limit - static_cast<int>(events.size());
  for (Event& event : by_creation_index(db, rest)) events.push_back(std::move(event));
  return events;
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
    const bool time_only = filter.consumer.empty() && filter.topic.empty() && filter.key.empty() &&
                           filter.event_id.empty() && filter.dedup_key.empty();
    if (time_only && (filter.since || filter.until)) return by_time_range(db, filter);
    SqlFilter sql;
    std::string from = " FROM sluice_events e";
    if (!filter.consumer.empty()) {
      from += kConsumerJoins;
      sql.where("c.id = ?", {consumer_id(db, filter.consumer)});
      if (!filter.state.empty()) {
        sql.where(std::string(kStateExpression) + " = ?", {filter.state});
      }
    }
    where_seq_bounds(sql, filter);
    if (!filter.topic.empty()) sql.where("e.topic = ?", {filter.topic});
    if (!filter.key.empty()) sql.where("e.key = ?", {filter.key});
    if (!filter.event_id.empty()) sql.where("e.id = ?", {filter.event_id});
    if (!filter.dedup_key.empty()) sql.where("e.dedup_key = ?", {filter.dedup_key});
    // By seq between the first and last seq of the range, which sluice_events_created gives
    // exactly (min(+seq): not by walking seq order to a match).
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
    return select_events(db, from, sql, filter);
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
