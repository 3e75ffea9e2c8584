// Pipeline statistics, read from the file so every process sees the same numbers.
#pragma once

#include <SQLiteCpp/Database.h>

#include <optional>
#include <string>
#include <vector>

#include "sluice/options.hpp"

namespace sluice {

struct ConsumerStats {
  std::string consumer;
  std::vector<std::string> topics;
  // Events waiting for a first or further attempt (due or not).
  long long pending = 0;
  // Events claimed by a worker right now.
  long long claimed = 0;
  // Pending events that have failed at least once.
  long long retrying = 0;
  // Dead letters not discarded.
  long long dead = 0;
  long long delivered_total = 0;
  long long retries_total = 0;
  // Deliveries postponed without spending an attempt: snoozes (for the NATS relay, the broker
  // being unreachable or slow).
  long long snoozed_total = 0;
  // Age of the oldest pending event; 0 when none.
  Duration lag{0};
  // Keys held back by a dead letter (ordered consumers).
  long long parked_keys = 0;
  // Pending events left by workers without a handler for their topic, for a worker of the
  // consumer that has one (delivery reason 'unhandled'; no attempt spent). Part of `pending`.
  long long waiting_for_handler = 0;
  // Events a worker would take now: pending ones whose not-before time and next attempt have
  // come, and claimed ones. Work that waits only for a worker to be running.
  long long due = 0;
  // Paused now (pause.hpp): no worker claims its events. An operator's pause or a handler's
  // throttle.
  bool paused = false;
  // The rest of the pause's fields are set only while it is paused.
  // When the pause began.
  TimePoint paused_since;
  // When it ends by itself; unset when it lasts until resumed.
  std::optional<TimePoint> paused_until;
  // Why: the operator's note, or a throttling handler's reason; empty when none.
  std::string pause_note;
  // Who paused it: "operator" or "throttle" (a handler, Context::throttle).
  std::string paused_by;
  // Events a handler gave back by throttling (no attempt spent); not in snoozed_total.
  long long throttled_total = 0;
  // Its circuit breaker (ConsumerOptions::breaker): "off" without one, else "closed", "open"
  // (no event goes through until breaker_open_until) or "half-open" (one probe event may go, or
  // is out).
  std::string breaker = "off";
  // Transient failures in a row toward opening it (none since the last success).
  long long breaker_failures = 0;
  // Set while open or half-open: when the cool-down in force ends (or ended).
  std::optional<TimePoint> breaker_open_until;
  // The cool-down in force; 0 while closed.
  Duration breaker_cool_down{0};
};

// Events of one consumer and topic waiting for a handler (see ConsumerStats).
struct HandlerWait {
  std::string consumer;
  std::string topic;
  // Waiting events created before the given age.
  long long events = 0;
  // Creation time of the oldest of them.
  TimePoint oldest;
};

// Where a NATS ingester (sluice/ingester.hpp) stands in its stream, as committed in the file.
struct IngestPosition {
  std::string stream;
  std::string durable;
  // The stream sequence of the last message ingested (or skipped as malformed).
  long long stream_seq = 0;
};

// One row per consumer, by name.
std::vector<ConsumerStats> consumer_stats(SQLite::Database& db, const Options& options = {});

// Per consumer and topic, the events waiting for a handler that were created before
// now - `older_than`: none of the consumer's running workers has a handler for them if they wait
// that long. By consumer, then topic. Reads only.
std::vector<HandlerWait> waiting_for_handler(SQLite::Database& db, Duration older_than,
                                             const Options& options = {});

// One row per (stream, durable) an ingester has committed into this file, by stream and durable.
// Never writes.
std::vector<IngestPosition> ingest_positions(SQLite::Database& db);

// Prometheus text exposition (version 0.0.4) of consumer_stats(): sluice_backlog,
// sluice_lag_seconds, sluice_claimed, sluice_retrying, sluice_dead_letters,
// sluice_delivered_total, sluice_retries_total, sluice_snoozed_total, sluice_parked_keys,
// sluice_waiting_for_handler, sluice_paused (1 or 0), sluice_paused_since_seconds and
// sluice_paused_until_seconds (Unix times, 0 when not paused / no end), sluice_throttled_total,
// sluice_breaker_open (1 open, 0.5 half-open, 0 closed or none), sluice_breaker_failures,
// sluice_breaker_open_until_seconds (Unix time, 0 when closed), sluice_breaker_cool_down_seconds,
// each labelled by consumer; and of ingest_positions():
// sluice_ingest_position, labelled by stream and durable. Counts are exact integers, the lag
// exact to the millisecond; label values are escaped.
std::string metrics_text(SQLite::Database& db, const Options& options = {});

}  // namespace sluice
