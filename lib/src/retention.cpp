#include "sluice/retention.hpp"

#include <SQLiteCpp/Statement.h>

#include <algorithm>

#include "audit_trail.hpp"
#include "connection_clock.hpp"
#include "crash_point.hpp"
#include "log_to.hpp"
#include "saturating_time.hpp"
#include "sluice/error.hpp"
#include "sqlite_error.hpp"
#include "time_format.hpp"
#include "write_transaction.hpp"

namespace sluice {
namespace {

std::string describe(Duration d) {
  const long long seconds = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (seconds % 86400 == 0 && seconds > 0) return std::to_string(seconds / 86400) + "d";
  if (seconds % 3600 == 0 && seconds > 0) return std::to_string(seconds / 3600) + "h";
  if (seconds % 60 == 0 && seconds > 0) return std::to_string(seconds / 60) + "m";
  return std::to_string(seconds) + "s";
}

// Events every consumer is past, created before `cutoff`, with no unfinished or dead-lettered
// delivery, after seq `after`.
const char* const kPrunable =
    "SELECT e.seq, e.id FROM sluice_events e WHERE e.seq > ?1 AND e.seq <= ?2 AND "
    "e.created_at < ?3 AND NOT EXISTS (SELECT 1 FROM sluice_deliveries d WHERE "
    "d.event_seq = e.seq AND d.state <> 'discarded') ORDER BY e.seq LIMIT ?4";

// What kPrunable would select, counted at once for a dry run: every event in range less those
// a delivery row other than a discarded one keeps. Walking kPrunable probed the deliveries for
// each event (535 ms for 570k events); this probes them once per delivery row.
const char* const kPrunableCount =
    "SELECT (SELECT count(*) FROM sluice_events WHERE seq <= ?1 AND created_at < ?2) - "
    "(SELECT count(DISTINCT d.event_seq) FROM sluice_deliveries d JOIN sluice_events e ON "
    "e.seq = d.event_seq WHERE d.state <> 'discarded' AND e.seq <= ?1 AND e.created_at < ?2)";

// The highest seq every consumer and every claim is past.
std::int64_t finished_up_to(SQLite::Database& db) {
  return db
      .execAndGet(
          "SELECT min((SELECT coalesce(max(seq), 0) FROM sluice_events), "
          "coalesce((SELECT min(cursor) FROM sluice_consumers), 9223372036854775807), "
          "coalesce((SELECT min(from_seq) FROM sluice_claims), 9223372036854775807))")
      .getInt64();
}

// Per consumer ?1 with cursor ?2: the events created before ?3 it keeps, as rows of (dead letter?,
// events, oldest creation time). By seq from the cursor or claim: `+created_at` keeps the planner
// off sluice_events_created, through which it counted every event older than ?3 in the file.
const char* const kPastCursor =
    "SELECT 0, count(*), min(created_at) FROM sluice_events WHERE seq > ?2 AND +created_at < ?3";
const char* const kInClaims =
    "SELECT 0, count(*), min(created_at) FROM sluice_events WHERE seq > (SELECT min(from_seq) "
    "FROM sluice_claims WHERE consumer_id = ?1) AND seq <= ?2 AND +created_at < ?3";
const char* const kInDeliveries =
    "SELECT d.state = 'dead', count(*), min(e.created_at) FROM sluice_deliveries d JOIN "
    "sluice_events e ON e.seq = d.event_seq WHERE d.consumer_id = ?1 AND d.state <> 'discarded' "
    "AND e.created_at < ?3 GROUP BY 1";

// Runs one of the queries above and adds a hold for `reason` (kDeadLetter for dead letters) per
// row that keeps any event.
void add_holds(SQLite::Statement& query, std::int64_t consumer, std::int64_t cursor,
               std::int64_t cutoff, const std::string& name, HoldReason reason,
               std::vector<RetentionHold>& holds) {
  query.reset();
  query.bind(1, static_cast<int64_t>(consumer));
  query.bind(2, static_cast<int64_t>(cursor));
  query.bind(3, static_cast<int64_t>(cutoff));
  while (query.executeStep()) {
    const long long events = query.getColumn(1).getInt64();
    if (events == 0) continue;
    holds.push_back({name, query.getColumn(0).getInt() != 0 ? HoldReason::kDeadLetter : reason,
                     events, TimePoint(Duration(query.getColumn(2).getInt64()))});
  }
}

// retention_holds(), or pinned_holds() without `with_deliveries`.
std::vector<RetentionHold> holds_of(SQLite::Database& db, Duration older_than,
                                    const Options& options, bool with_deliveries) {
  return guarded("read retention holds", [&] {
    const auto clock = clock_for(db, options);
    const std::int64_t cutoff = to_millis(clock->now() - older_than);
    SQLite::Statement consumers(db, "SELECT id, name, cursor FROM sluice_consumers");
    SQLite::Statement past_cursor(db, kPastCursor);
    SQLite::Statement in_claims(db, kInClaims);
    SQLite::Statement in_deliveries(db, kInDeliveries);
    std::vector<RetentionHold> holds;
    while (consumers.executeStep()) {
      const std::int64_t id = consumers.getColumn(0).getInt64();
      const std::string name = consumers.getColumn(1).getString();
      const std::int64_t cursor = consumers.getColumn(2).getInt64();
      add_holds(past_cursor, id, cursor, cutoff, name, HoldReason::kCursor, holds);
      add_holds(in_claims, id, cursor, cutoff, name, HoldReason::kClaim, holds);
      if (with_deliveries) {
        add_holds(in_deliveries, id, cursor, cutoff, name, HoldReason::kUnfinished, holds);
      }
    }
    std::stable_sort(
        holds.begin(), holds.end(),
        [](const RetentionHold& a, const RetentionHold& b) { return a.events > b.events; });
    return holds;
  });
}

}  // namespace

const char* to_string(HoldReason reason) {
  switch (reason) {
    case HoldReason::kCursor:
      return "cursor";
    case HoldReason::kClaim:
      return "claim";
    case HoldReason::kUnfinished:
      return "unfinished";
    case HoldReason::kDeadLetter:
      return "dead_letter";
  }
  return "cursor";
}

std::vector<RetentionHold> retention_holds(SQLite::Database& db, Duration older_than,
                                           const Options& options) {
  return holds_of(db, older_than, options, true);
}

std::vector<RetentionHold> pinned_holds(SQLite::Database& db, Duration older_than,
                                        const Options& options) {
  return holds_of(db, older_than, options, false);
}

Duration dedup_horizon(SQLite::Database& db, const Options& options) {
  return guarded("read dedup horizon", [&] {
    const long long stored =
        db.execAndGet("SELECT coalesce(max(retry_span_ms), 0) FROM sluice_consumers").getInt64();
    return std::max(Duration(stored), options.retry.longest_span());
  });
}

long long prune(SQLite::Database& db, Duration retention, const PruneOptions& prune_options,
                const Options& options) {
  AuditEntry audit;
  return prune(db, retention, prune_options, options, audit);
}

long long prune(SQLite::Database& db, Duration retention, const PruneOptions& prune_options,
                const Options& options, AuditEntry& audit) {
  audit.action = "prune";
  AuditTrail trail(audit, "{\"older_than_ms\":" + std::to_string(retention.count()) +
                              (prune_options.force ? ",\"force\":true}" : "}"));
  if (retention.count() < 0) throw InvalidArgument("sluice: prune: the retention is negative");
  if (prune_options.batch_size < 1) throw InvalidArgument("sluice: prune: batch_size must be >= 1");
  const Duration horizon = dedup_horizon(db, options);
  if (retention < horizon && !prune_options.force) {
    throw InvalidArgument("sluice: prune: a retention of " + describe(retention) +
                          " is shorter than the dedup horizon of " + describe(horizon) +
                          " (the longest retry span): dedup keys and seen IDs could be forgotten "
                          "while retries still run; force to prune anyway");
  }
  return guarded("prune", [&] {
    const auto clock = clock_for(db, options);
    // A retention longer than the clock has run cuts off at the start of time: nothing.
    const std::int64_t cutoff = to_millis(sub_saturating(clock->now(), retention));
    std::vector<std::int64_t> consumers;
    {
      SQLite::Statement all(db, "SELECT id FROM sluice_consumers");
      while (all.executeStep()) consumers.push_back(all.getColumn(0).getInt64());
    }
    long long pruned = 0;
    std::int64_t after = 0;
    if (prune_options.dry_run) {
      SQLite::Statement count(db, kPrunableCount);
      count.bind(1, static_cast<int64_t>(finished_up_to(db)));
      count.bind(2, static_cast<int64_t>(cutoff));
      count.executeStep();
      pruned = count.getColumn(0).getInt64();
      if (prune_options.progress && pruned > 0) prune_options.progress(pruned);
    }
    while (!prune_options.dry_run) {
      WriteTransaction tx(db);
      const std::int64_t limit = finished_up_to(db);
      SQLite::Statement select(db, kPrunable);
      select.bind(1, static_cast<int64_t>(after));
      select.bind(2, static_cast<int64_t>(limit));
      select.bind(3, static_cast<int64_t>(cutoff));
      select.bind(4, prune_options.batch_size);
      std::vector<std::pair<std::int64_t, std::string>> events;
      while (select.executeStep()) {
        events.emplace_back(select.getColumn(0).getInt64(), select.getColumn(1).getString());
      }
      if (events.empty()) break;
      after = events.back().first;
      SQLite::Statement forget(db,
                               "DELETE FROM sluice_inbox WHERE consumer_id = ? AND event_id = ?");
      SQLite::Statement deliveries(db, "DELETE FROM sluice_deliveries WHERE event_seq = ?");
      SQLite::Statement attempts(db, "DELETE FROM sluice_attempts WHERE event_seq = ?");
      SQLite::Statement event(db, "DELETE FROM sluice_events WHERE seq = ?");
      for (const auto& [seq, id] : events) {
        for (std::int64_t consumer : consumers) {
          forget.reset();
          forget.bind(1, static_cast<int64_t>(consumer));
          forget.bind(2, id);
          forget.exec();
        }
        for (SQLite::Statement* s : {&deliveries, &attempts, &event}) {
          s->reset();
          s->bind(1, static_cast<int64_t>(seq));
          s->exec();
        }
      }
      trail.record(db, static_cast<long long>(events.size()), clock->now());
      SLUICE_CRASH_POINT("during-prune");
      tx.commit();
      trail.committed();
      pruned += static_cast<long long>(events.size());
      if (prune_options.progress) prune_options.progress(pruned);
    }
    if (!prune_options.dry_run) trail.finish(db, clock->now());
    if (prune_options.held_back != nullptr) {
      *prune_options.held_back = retention_holds(db, retention, options);
    }
    if (!prune_options.dry_run) {
      log_to(options, LogLevel::kInfo, "pruned",
             {{"events", pruned}, {"retention", describe(retention)}});
    }
    return pruned;
  });
}

}  // namespace sluice
