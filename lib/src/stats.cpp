#include "sluice/stats.hpp"

#include <SQLiteCpp/Statement.h>

#include <algorithm>
#include <optional>

#include "breaker_state.hpp"
#include "connection_clock.hpp"
#include "prometheus_text.hpp"
#include "saturating_time.hpp"
#include "sqlite_error.hpp"
#include "time_format.hpp"

namespace sluice {
namespace {

// Per consumer: events past its cursor (never claimed yet), with the oldest one's creation time.
const char* const kBacklog =
    "SELECT count(*), min(CASE WHEN e.not_before IS NULL OR e.not_before <= ?3 THEN "
    "e.created_at END), count(CASE WHEN e.not_before IS NULL OR e.not_before <= ?3 THEN 1 END) "
    "FROM sluice_events e CROSS JOIN sluice_subscriptions s "
    "WHERE e.seq > ?2 AND s.consumer_id = ?1 AND s.topic = e.topic AND e.seq > s.start_seq";

// Fresh events inside live claims that are not handled yet. CROSS JOIN: by the claims' seq
// ranges always; given an index on sluice_events by topic the planner walked every event of each
// subscribed topic instead (2.3 s per consumer on a 1M-event file).
const char* const kClaimedFresh =
    "SELECT count(*), min(e.created_at) FROM sluice_claims k CROSS JOIN sluice_events e ON "
    "e.seq > k.from_seq AND e.seq <= k.to_seq CROSS JOIN sluice_subscriptions s ON s.consumer_id = "
    "k.consumer_id AND s.topic = e.topic AND e.seq > s.start_seq WHERE k.consumer_id = ?1 "
    "AND NOT EXISTS (SELECT 1 FROM sluice_inbox i WHERE i.consumer_id = ?1 AND i.event_id = e.id) "
    "AND NOT EXISTS (SELECT 1 FROM sluice_deliveries d WHERE d.consumer_id = ?1 AND "
    "d.event_seq = e.seq)";

// The counts by state from the index alone: a file with 10k dead letters reads no event and no
// delivery row for them (joining each to its event took 150 ms of the console's overview).
const char* const kStateCounts =
    "SELECT state, count(*) FROM sluice_deliveries WHERE consumer_id = ?1 GROUP BY state";

// Only the unfinished rows (few, in a healthy file) are read, with their events.
const char* const kUnfinished =
    "SELECT sum(d.state = 'pending' AND (d.reason = 'retry' OR d.reason = 'crashed')), "
    "sum(d.state = 'pending' AND d.reason = 'unhandled'), "
    "min(CASE WHEN e.not_before IS NULL OR e.not_before <= ?2 THEN e.created_at END), "
    "sum(d.state = 'claimed' OR (d.next_attempt_at <= ?2 AND (e.not_before IS NULL OR "
    "e.not_before <= ?2))) FROM sluice_deliveries d JOIN sluice_events e ON e.seq = d.event_seq "
    "WHERE d.consumer_id = ?1 AND (d.state = 'pending' OR d.state = 'claimed')";

// An ordered consumer's keys held back by a dead letter.
const char* const kParkedKeys =
    "SELECT count(DISTINCT key) FROM sluice_deliveries WHERE consumer_id = ?1 AND state = 'dead' "
    "AND key IS NOT NULL";

long long int_or_zero(const SQLite::Column& column) {
  return column.isNull() ? 0 : column.getInt64();
}

void keep_oldest(std::optional<std::int64_t>& oldest, const SQLite::Column& column) {
  if (column.isNull()) return;
  if (!oldest || column.getInt64() < *oldest) oldest = column.getInt64();
}

}  // namespace

std::vector<ConsumerStats> consumer_stats(SQLite::Database& db, const Options& options) {
  return guarded("read stats", [&] {
    const auto clock = clock_for(db, options);
    const std::int64_t now = to_millis(clock->now());
    std::vector<ConsumerStats> all;
    SQLite::Statement consumers(
        db,
        "SELECT id, name, cursor, delivered_total, retries_total, snoozed_total, paused_at, "
        "paused_until, coalesce(pause_note, ''), coalesce(paused_by, ''), throttled_total, "
        "breaker_failures IS NOT NULL, breaker_consecutive, breaker_open_until, "
        "coalesce(breaker_open_ms, 0), breaker_probe, ordered "
        "FROM sluice_consumers ORDER BY name");
    SQLite::Statement topics(db,
                             "SELECT topic FROM sluice_subscriptions WHERE consumer_id = ? "
                             "ORDER BY topic");
    SQLite::Statement backlog(db, kBacklog);
    SQLite::Statement claimed_fresh(db, kClaimedFresh);
    SQLite::Statement state_counts(db, kStateCounts);
    SQLite::Statement unfinished(db, kUnfinished);
    SQLite::Statement parked_keys(db, kParkedKeys);
    while (consumers.executeStep()) {
      ConsumerStats stats;
      const std::int64_t id = consumers.getColumn(0).getInt64();
      stats.consumer = consumers.getColumn(1).getString();
      stats.delivered_total = consumers.getColumn(3).getInt64();
      stats.retries_total = consumers.getColumn(4).getInt64();
      stats.snoozed_total = consumers.getColumn(5).getInt64();
      // A pause that ran out is no pause: its fields stay empty.
      stats.paused = !consumers.getColumn(6).isNull() &&
                     (consumers.getColumn(7).isNull() || consumers.getColumn(7).getInt64() > now);
      if (stats.paused) {
        stats.paused_since = TimePoint(Duration(consumers.getColumn(6).getInt64()));
        if (!consumers.getColumn(7).isNull()) {
          stats.paused_until = TimePoint(Duration(consumers.getColumn(7).getInt64()));
        }
        stats.pause_note = consumers.getColumn(8).getString();
        stats.paused_by = consumers.getColumn(9).getString();
      }
      stats.throttled_total = consumers.getColumn(10).getInt64();
      if (consumers.getColumn(11).getInt() != 0) {
        BreakerState breaker;
        breaker.consecutive = consumers.getColumn(12).getInt64();
        if (!consumers.getColumn(13).isNull())
          breaker.open_until = TimePoint(Duration(consumers.getColumn(13).getInt64()));
        breaker.open_for = Duration(consumers.getColumn(14).getInt64());
        breaker.probe = consumers.getColumn(15).getInt() != 0;
        stats.breaker = breaker.name(TimePoint(Duration(now)));
        stats.breaker_failures = breaker.consecutive;
        stats.breaker_open_until = breaker.open_until;
        stats.breaker_cool_down = breaker.open_for;
      }
      topics.reset();
      topics.bind(1, static_cast<int64_t>(id));
      while (topics.executeStep()) stats.topics.push_back(topics.getColumn(0).getString());
      std::optional<std::int64_t> oldest;

      backlog.reset();
      backlog.bind(1, static_cast<int64_t>(id));
      backlog.bind(2, static_cast<int64_t>(consumers.getColumn(2).getInt64()));
      backlog.bind(3, static_cast<int64_t>(now));
      backlog.executeStep();
      stats.pending = backlog.getColumn(0).getInt64();
      keep_oldest(oldest, backlog.getColumn(1));
      stats.due = backlog.getColumn(2).getInt64();

      claimed_fresh.reset();
      claimed_fresh.bind(1, static_cast<int64_t>(id));
      claimed_fresh.executeStep();
      stats.claimed = claimed_fresh.getColumn(0).getInt64();
      stats.due += stats.claimed;
      keep_oldest(oldest, claimed_fresh.getColumn(1));

      state_counts.reset();
      state_counts.bind(1, static_cast<int64_t>(id));
      while (state_counts.executeStep()) {
        const std::string state = state_counts.getColumn(0).getString();
        const long long count = state_counts.getColumn(1).getInt64();
        if (state == "pending") stats.pending += count;
        if (state == "claimed") stats.claimed += count;
        if (state == "dead") stats.dead = count;
      }
      unfinished.reset();
      unfinished.bind(1, static_cast<int64_t>(id));
      unfinished.bind(2, static_cast<int64_t>(now));
      unfinished.executeStep();
      stats.retrying = int_or_zero(unfinished.getColumn(0));
      stats.waiting_for_handler = int_or_zero(unfinished.getColumn(1));
      keep_oldest(oldest, unfinished.getColumn(2));
      stats.due += int_or_zero(unfinished.getColumn(3));
      if (stats.dead > 0 && consumers.getColumn(16).getInt() != 0) {
        parked_keys.reset();
        parked_keys.bind(1, static_cast<int64_t>(id));
        parked_keys.executeStep();
        stats.parked_keys = parked_keys.getColumn(0).getInt64();
      }
      if (oldest) {
        stats.lag = std::max(
            Duration(0), sub_saturating(TimePoint(Duration(now)), TimePoint(Duration(*oldest))));
      }
      all.push_back(std::move(stats));
    }
    return all;
  });
}

std::vector<HandlerWait> waiting_for_handler(SQLite::Database& db, Duration older_than,
                                             const Options& options) {
  return guarded("read events waiting for a handler", [&] {
    const auto clock = clock_for(db, options);
    SQLite::Statement query(
        db,
        "SELECT c.name, e.topic, count(*), min(e.created_at) FROM sluice_deliveries d "
        "JOIN sluice_events e ON e.seq = d.event_seq JOIN sluice_consumers c ON c.id = "
        "d.consumer_id WHERE d.state = 'pending' AND d.reason = 'unhandled' AND e.created_at < ? "
        "GROUP BY c.name, e.topic ORDER BY c.name, e.topic");
    query.bind(1, static_cast<int64_t>(to_millis(sub_saturating(clock->now(), older_than))));
    std::vector<HandlerWait> waits;
    while (query.executeStep()) {
      waits.push_back({query.getColumn(0).getString(), query.getColumn(1).getString(),
                       query.getColumn(2).getInt64(),
                       TimePoint(Duration(query.getColumn(3).getInt64()))});
    }
    return waits;
  });
}

std::vector<IngestPosition> ingest_positions(SQLite::Database& db) {
  return guarded("read ingest positions", [&] {
    std::vector<IngestPosition> all;
    SQLite::Statement query(db,
                            "SELECT stream, durable, stream_seq FROM sluice_nats_positions "
                            "ORDER BY stream, durable");
    while (query.executeStep()) {
      all.push_back({query.getColumn(0).getString(), query.getColumn(1).getString(),
                     query.getColumn(2).getInt64()});
    }
    return all;
  });
}

std::string metrics_text(SQLite::Database& db, const Options& options) {
  const std::vector<ConsumerStats> all = consumer_stats(db, options);
  struct Metric {
    const char* name;
    const char* type;
    const char* help;
    double (*value)(const ConsumerStats&);
  };
  static const Metric kMetrics[] = {
      {"sluice_backlog", "gauge", "Events waiting for a consumer: pending plus claimed.",
       [](const ConsumerStats& s) { return static_cast<double>(s.pending + s.claimed); }},
      {"sluice_lag_seconds", "gauge", "Age of the oldest event a consumer has not finished.",
       [](const ConsumerStats& s) { return s.lag.count() / 1000.0; }},
      {"sluice_claimed", "gauge", "Events claimed by a worker right now.",
       [](const ConsumerStats& s) { return static_cast<double>(s.claimed); }},
      {"sluice_retrying", "gauge", "Events waiting for a retry after a failed attempt.",
       [](const ConsumerStats& s) { return static_cast<double>(s.retrying); }},
      {"sluice_dead_letters", "gauge", "Dead letters not yet replayed or discarded.",
       [](const ConsumerStats& s) { return static_cast<double>(s.dead); }},
      {"sluice_delivered_total", "counter", "Events delivered since the consumer was created.",
       [](const ConsumerStats& s) { return static_cast<double>(s.delivered_total); }},
      {"sluice_retries_total", "counter", "Retries scheduled since the consumer was created.",
       [](const ConsumerStats& s) { return static_cast<double>(s.retries_total); }},
      {"sluice_snoozed_total", "counter",
       "Deliveries postponed without spending an attempt (snoozes; a relay: broker down).",
       [](const ConsumerStats& s) { return static_cast<double>(s.snoozed_total); }},
      {"sluice_parked_keys", "gauge", "Ordering keys held back by a dead letter.",
       [](const ConsumerStats& s) { return static_cast<double>(s.parked_keys); }},
      {"sluice_waiting_for_handler", "gauge",
       "Pending events left for a worker with a handler for their topic.",
       [](const ConsumerStats& s) { return static_cast<double>(s.waiting_for_handler); }},
      {"sluice_paused", "gauge",
       "1 while the consumer is paused (by an operator or a throttling handler).",
       [](const ConsumerStats& s) { return s.paused ? 1.0 : 0.0; }},
      {"sluice_paused_since_seconds", "gauge",
       "Unix time the pause in force began; 0 when not paused.",
       [](const ConsumerStats& s) {
         return s.paused ? s.paused_since.time_since_epoch().count() / 1000.0 : 0.0;
       }},
      {"sluice_paused_until_seconds", "gauge",
       "Unix time the pause in force ends by itself; 0 when not paused or until resumed.",
       [](const ConsumerStats& s) {
         return s.paused && s.paused_until ? s.paused_until->time_since_epoch().count() / 1000.0
                                           : 0.0;
       }},
      {"sluice_throttled_total", "counter",
       "Events a throttling handler gave back without spending an attempt.",
       [](const ConsumerStats& s) { return static_cast<double>(s.throttled_total); }},
      {"sluice_breaker_open", "gauge",
       "The consumer's circuit breaker: 1 open, 0.5 half-open (a probe may go), 0 closed or none.",
       [](const ConsumerStats& s) {
         return s.breaker == "open" ? 1.0 : s.breaker == "half-open" ? 0.5 : 0.0;
       }},
      {"sluice_breaker_failures", "gauge",
       "Transient failures in a row counted toward opening the breaker.",
       [](const ConsumerStats& s) { return static_cast<double>(s.breaker_failures); }},
      {"sluice_breaker_open_until_seconds", "gauge",
       "Unix time the breaker's cool-down in force ends; 0 when closed or none.",
       [](const ConsumerStats& s) {
         return s.breaker_open_until ? s.breaker_open_until->time_since_epoch().count() / 1000.0
                                     : 0.0;
       }},
      {"sluice_breaker_cool_down_seconds", "gauge",
       "The breaker's cool-down in force (doubling per failed probe); 0 when closed or none.",
       [](const ConsumerStats& s) { return s.breaker_cool_down.count() / 1000.0; }},
  };
  std::string out;
  for (const Metric& metric : kMetrics) {
    out += prometheus::family(metric.name, metric.type, metric.help);
    for (const ConsumerStats& stats : all) {
      out += prometheus::sample(metric.name, prometheus::label("consumer", stats.consumer),
                                metric.value(stats));
    }
  }
  // Only files a NATS ingester writes to have positions; the others keep their exposition.
  const std::vector<IngestPosition> positions = ingest_positions(db);
  if (!positions.empty()) {
    out += prometheus::family(
        "sluice_ingest_position", "gauge",
        "Stream sequence of the last message a NATS ingester committed into this file.");
  }
  for (const IngestPosition& position : positions) {
    out += prometheus::sample("sluice_ingest_position",
                              prometheus::label("stream", position.stream) + "," +
                                  prometheus::label("durable", position.durable),
                              static_cast<double>(position.stream_seq));
  }
  return out;
}

}  // namespace sluice
