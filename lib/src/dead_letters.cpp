#include "sluice/dead_letters.hpp"

#include <SQLiteCpp/Statement.h>

#include <nlohmann/json.hpp>

#include "audit_trail.hpp"
#include "connection_clock.hpp"
#include "consumer_registry.hpp"
#include "crash_point.hpp"
#include "log_to.hpp"
#include "sluice/error.hpp"
#include "sql_filter.hpp"
#include "sqlite_error.hpp"
#include "time_format.hpp"
#include "write_transaction.hpp"

namespace sluice {
namespace {

// Dead letters changed per short transaction, so an operator's replay never holds the write lock
// for long while the app runs.
constexpr int kDeadLetterBatch = 200;

SqlFilter dead_letter_filter(SQLite::Database& db, const DeadLetterFilter& filter,
                             bool include_discarded) {
  SqlFilter sql;
  sql.where(include_discarded ? "d.state IN ('dead', 'discarded')" : "d.state = 'dead'");
  if (!filter.consumer.empty()) sql.where("d.consumer_id = ?", {consumer_id(db, filter.consumer)});
  if (!filter.topic.empty()) sql.where("e.topic = ?", {filter.topic});
  if (filter.since) sql.where("d.last_failed_at >= ?", {to_millis(*filter.since)});
  if (filter.until) sql.where("d.last_failed_at < ?", {to_millis(*filter.until)});
  if (!filter.error_contains.empty()) {
    sql.where("instr(d.last_error, ?) > 0", {filter.error_contains});
  }
  sql.where_in("e.id", filter.event_ids);
  return sql;
}

const char* const kDeadLetterFrom =
    " FROM sluice_deliveries d JOIN sluice_events e ON e.seq = d.event_seq "
    "JOIN sluice_consumers c ON c.id = d.consumer_id WHERE 1";

// `filter` as the audit log records it, a JSON object of the fields set.
std::string filter_record(const DeadLetterFilter& filter) {
  nlohmann::json record = nlohmann::json::object();
  if (!filter.event_ids.empty()) record["event_ids"] = filter.event_ids;
  if (!filter.consumer.empty()) record["consumer"] = filter.consumer;
  if (!filter.topic.empty()) record["topic"] = filter.topic;
  if (filter.since) record["since"] = format_rfc3339(*filter.since);
  if (filter.until) record["until"] = format_rfc3339(*filter.until);
  if (!filter.error_contains.empty()) record["error"] = filter.error_contains;
  return record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The highest event seq of a dead letter matching `sql`, 0 when none does.
std::int64_t highest_match(SQLite::Database& db, const SqlFilter& sql) {
  SQLite::Statement highest(
      db, std::string("SELECT coalesce(max(d.event_seq), 0)") + kDeadLetterFrom + sql.clause());
  sql.bind(highest);
  highest.executeStep();
  return highest.getColumn(0).getInt64();
}

// Applies `change` to the dead letters matching when it starts, kDeadLetterBatch per transaction.
// `change` has parameters ?1 consumer id, ?2 event seq, ?3 note. It walks the matches once
// in key order up to the highest event seq among them: a worker dead-letters replayed events again
// behind the walk, and new dead letters come above the bound, so re-selecting "the first matches"
// until none is left would never end beside a worker that keeps failing.
long long change_dead_letters(SQLite::Database& db, const DeadLetterFilter& filter,
                              const std::string& change, const char* history_outcome,
                              const std::string& note, const Options& options,
                              const DeadLetterProgress& progress, AuditTrail& audit) {
  const auto clock = clock_for(db, options);
  const SqlFilter sql = dead_letter_filter(db, filter, false);
  const std::int64_t last_seq = highest_match(db, sql);
  std::int64_t after_seq = 0;
  std::int64_t after_consumer = 0;
  long long changed = 0;
  while (true) {
    WriteTransaction tx(db);
    const TimePoint now = clock->now();
    SQLite::Statement select(db, std::string("SELECT d.consumer_id, d.event_seq, d.attempts, "
                                             "e.id, c.name, e.topic, d.last_error, e.created_at") +
                                     kDeadLetterFrom + sql.clause() +
                                     " AND (d.event_seq, d.consumer_id) > (?, ?) AND "
                                     "d.event_seq <= ? ORDER BY d.event_seq, d.consumer_id LIMIT " +
                                     std::to_string(kDeadLetterBatch));
    const int next = sql.bind(select);
    select.bind(next, static_cast<int64_t>(after_seq));
    select.bind(next + 1, static_cast<int64_t>(after_consumer));
    select.bind(next + 2, static_cast<int64_t>(last_seq));
    struct Row {
      std::int64_t consumer;
      std::int64_t seq;
      int attempts;
      LogFields fields;
    };
    std::vector<Row> rows;
    while (select.executeStep()) {
      const int attempts = select.getColumn(2).getInt();
      rows.push_back({select.getColumn(0).getInt64(),
                      select.getColumn(1).getInt64(),
                      attempts,
                      {{"event_id", select.getColumn(3).getString()},
                       {"consumer", select.getColumn(4).getString()},
                       {"topic", select.getColumn(5).getString()},
                       {"attempt", attempts},
                       {"error", select.getColumn(6).getString()},
                       {"lag_ms", to_millis(now) - select.getColumn(7).getInt64()},
                       {"note", note}}});
    }
    if (rows.empty()) break;
    after_seq = rows.back().seq;
    after_consumer = rows.back().consumer;
    SQLite::Statement update(db, change);
    SQLite::Statement history(db,
                              "INSERT INTO sluice_attempts (consumer_id, event_seq, attempt, at, "
                              "outcome, error) VALUES (?, ?, ?, ?, ?, ?)");
    for (const auto& [consumer, seq, attempts, fields] : rows) {
      update.reset();
      update.bind(1, static_cast<int64_t>(consumer));
      update.bind(2, static_cast<int64_t>(seq));
      update.bind(3, note);
      update.exec();
      history.reset();
      history.bind(1, static_cast<int64_t>(consumer));
      history.bind(2, static_cast<int64_t>(seq));
      history.bind(3, attempts);
      history.bind(4, static_cast<int64_t>(to_millis(now)));
      history.bind(5, history_outcome);
      if (note.empty()) {
        history.bind(6);
      } else {
        history.bind(6, note);
      }
      history.exec();
      log_to(options, LogLevel::kInfo, std::string("dead letter ") + history_outcome, fields);
    }
    audit.record(db, static_cast<long long>(rows.size()), now);
    SLUICE_CRASH_POINT("during-replay");
    tx.commit();
    audit.committed();
    changed += static_cast<long long>(rows.size());
    if (progress) progress(changed);
  }
  audit.finish(db, clock->now());
  return changed;
}

}  // namespace

std::vector<DeadLetter> list_dead_letters(SQLite::Database& db, const DeadLetterFilter& filter) {
  return guarded("list dead letters", [&] {
    const SqlFilter sql = dead_letter_filter(db, filter, filter.include_discarded);
    SQLite::Statement select(
        db, std::string("SELECT e.id, e.seq, c.name, e.topic, e.key, d.reason, d.last_error, "
                        "d.attempts, d.first_failed_at, d.last_failed_at, d.state, d.note, "
                        // Headers a hand-edited file holds as malformed JSON leave it empty
                        // rather than failing the list.
                        "CASE WHEN json_valid(e.headers) THEN coalesce(substr(json_extract("
                        "e.headers, '$.traceparent'), 4, 32), '') ELSE '' END") +
                kDeadLetterFrom + sql.clause() + " ORDER BY d.last_failed_at, d.event_seq");
    sql.bind(select);
    std::vector<DeadLetter> letters;
    while (select.executeStep()) {
      DeadLetter letter;
      letter.event_id = select.getColumn(0).getString();
      letter.event_seq = select.getColumn(1).getInt64();
      letter.consumer = select.getColumn(2).getString();
      letter.topic = select.getColumn(3).getString();
      letter.key = select.getColumn(4).getString();
      letter.reason = select.getColumn(5).getString();
      letter.last_error = select.getColumn(6).getString();
      letter.attempts = select.getColumn(7).getInt();
      letter.first_failed_at = TimePoint(Duration(select.getColumn(8).getInt64()));
      letter.last_failed_at = TimePoint(Duration(select.getColumn(9).getInt64()));
      letter.discarded = select.getColumn(10).getString() == "discarded";
      letter.note = select.getColumn(11).getString();
      letter.trace_id = select.getColumn(12).getString();
      letters.push_back(std::move(letter));
    }
    return letters;
  });
}

long long replay_dead_letters(SQLite::Database& db, const DeadLetterFilter& filter,
                              const Options& options) {
  return replay_dead_letters(db, filter, options, {});
}

long long replay_dead_letters(SQLite::Database& db, const DeadLetterFilter& filter,
                              const Options& options, const DeadLetterProgress& progress) {
  AuditEntry audit;
  return replay_dead_letters(db, filter, options, progress, audit);
}

long long replay_dead_letters(SQLite::Database& db, const DeadLetterFilter& filter,
                              const Options& options, const DeadLetterProgress& progress,
                              AuditEntry& audit) {
  audit.action = "replay";
  AuditTrail trail(audit, filter_record(filter));
  return guarded("replay dead letters", [&] {
    return change_dead_letters(
        db, filter,
        // Due at once, whatever the clock reads (see schema::kDueAtOnce): a clock set back
        // after the replay must not strand it. Never before its own not-before time.
        "UPDATE sluice_deliveries SET state = 'pending', attempts = 0, next_attempt_at = "
        "coalesce((SELECT not_before FROM sluice_events WHERE seq = ?2), 0), "
        "scheduled_at = 0, suspect = 0, claim_id = NULL, reason = 'replayed', "
        "note = nullif(?3, '') "
        "WHERE consumer_id = ?1 AND event_seq = ?2",
        "replayed", {}, options, progress, trail);
  });
}

long long discard_dead_letters(SQLite::Database& db, const DeadLetterFilter& filter,
                               const std::string& note, const Options& options) {
  return discard_dead_letters(db, filter, note, options, {});
}

long long discard_dead_letters(SQLite::Database& db, const DeadLetterFilter& filter,
                               const std::string& note, const Options& options,
                               const DeadLetterProgress& progress) {
  AuditEntry audit;
  return discard_dead_letters(db, filter, note, options, progress, audit);
}

long long discard_dead_letters(SQLite::Database& db, const DeadLetterFilter& filter,
                               const std::string& note, const Options& options,
                               const DeadLetterProgress& progress, AuditEntry& audit) {
  if (note.empty()) {
    throw InvalidArgument("sluice: discard dead letters: a note saying why is required");
  }
  audit.action = "discard";
  audit.note = note;
  AuditTrail trail(audit, filter_record(filter));
  return guarded("discard dead letters", [&] {
    return change_dead_letters(db, filter,
                               "UPDATE sluice_deliveries SET state = 'discarded', note = ?3 "
                               "WHERE consumer_id = ?1 AND event_seq = ?2",
                               "discarded", note, options, progress, trail);
  });
}

}  // namespace sluice
