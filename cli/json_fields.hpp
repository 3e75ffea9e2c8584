// The JSON shapes of `--json` output. Field names here are a stable interface for scripts:
// docs/operating.md lists them; add fields, never rename or remove one.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "consumer_health.hpp"
#include "sluice/audit.hpp"
#include "sluice/dead_letters.hpp"
#include "sluice/event.hpp"
#include "sluice/inspect.hpp"
#include "sluice/stats.hpp"
#include "sluice/workers.hpp"

namespace sluice::cli {

// Keeps fields in the documented order.
using Json = nlohmann::ordered_json;

// seq, id, topic, version, key, dedup_key, created_at, not_before, trace_id (null without a
// traceparent), headers, payload (parsed JSON).
Json event_json(const Event& event);

// The trace ID of the event's W3C traceparent (the 32 hex digits a tracing UI searches by), or
// empty when it carries none.
std::string trace_id(const Event& event);
// consumer, state, attempts, next_attempt_at, delivered_at, last_error.
Json delivery_json(const DeliveryStatus& status);
// consumer, attempt, at, outcome, error.
Json attempt_json(const AttemptRecord& attempt);
// event_id, event_seq, consumer, topic, key, reason, last_error, fingerprint, attempts,
// first_failed_at, last_failed_at, discarded, note.
Json dead_letter_json(const DeadLetter& dead_letter);
// consumer, topics, pending, claimed, retrying, dead, delivered_total, retries_total,
// lag_seconds, parked_keys, waiting_for_handler, due, throttled_total, pause (pause_json),
// breaker (breaker_json).
Json consumer_stats_json(const ConsumerStats& stats);
// While paused, {since, until (null: until resumed), by (operator, throttle), note (null
// when none)}; null when not.
Json pause_json(const ConsumerStats& stats);
// {state: closed | open | half-open, failures, open_until, cool_down_seconds}, or null for a
// consumer without a circuit breaker.
Json breaker_json(const ConsumerStats& stats);
// id, consumer, worker_id, pid, since, lease_until, owner_alive.
Json held_claim_json(const HeldClaim& claim);
// id, pid, host, kind, consumers, started_at, liveness ("alive", "dead" or "unknown"), claims.
Json worker_json(const WorkerStatus& worker);
// status ("ok" or "warning"), findings ([{check, detail}]), live_workers, maybe_live_worker,
// last_seen_worker_at (null when no trace is left).
Json consumer_health_json(const ConsumerHealth& health);
// id, at, action, filter (parsed JSON), count, note (null when none), source.
Json audit_entry_json(const AuditEntry& entry);
// stream, durable, stream_seq.
Json ingest_position_json(const IngestPosition& position);

// An RFC 3339 string, or null when unset.
Json time_json(const std::optional<TimePoint>& t);

// `document` as text, `indent` spaces deep (-1: one line). JSON holds UTF-8 only: a byte of a
// string that is not UTF-8 (a file's text can hold any) comes out as U+FFFD rather than failing
// the command.
std::string json_text(const Json& document, int indent = -1);

// Writes `document` indented (one document per command) or on one line (JSON lines), as
// json_text.
void print_json(std::ostream& out, const Json& document);
void print_json_line(std::ostream& out, const Json& document);

}  // namespace sluice::cli
