// Events: what a producer hands to the outbox and what a handler receives.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "sluice/clock.hpp"

namespace sluice {

using Headers = std::map<std::string, std::string>;

// An event to enqueue. Only `topic` is required.
struct NewEvent {
  // Routing name, e.g. "order.placed". Non-empty.
  std::string topic;
  // A JSON document (object, array or scalar), validated on enqueue.
  std::string payload = "{}";
  // String headers, e.g. a trace ID, delivered byte for byte as given. Names and values must be
  // valid UTF-8 (any character, NUL included, in a value; no control character and at most 1024
  // bytes in a non-empty name): anything else is refused with InvalidArgument naming the
  // header, never stored altered. The NATS relay also dead-letters a value NATS headers cannot
  // carry as is: one holding a NUL or a line break, or starting or ending with white space.
  Headers headers;
  // Ordering key: an ordered consumer handles events with equal keys in enqueue order.
  // Empty means unkeyed.
  std::string key;
  // The idempotency key. Empty means "generate one" (time-ordered, unique). A second event with
  // an ID already in the file is a duplicate and is not stored.
  std::string id;
  // Domain dedup key naming one business operation, e.g. "order-42:paid". Empty means none.
  // A second event with the same topic and dedup key is a duplicate and is not stored.
  std::string dedup_key;
  // Not delivered before this time.
  std::optional<TimePoint> not_before;
  // W3C Trace Context: the producer's traceparent ("00-<trace id>-<parent id>-<flags>"), kept
  // with the event through retries, replays and the NATS relay, and seen by handlers and
  // Options::tracer; empty means none (then a "traceparent" header, then
  // Options::current_trace_context). Stored as the "traceparent" header. Malformed, or given
  // here and as a different header, it is refused with InvalidArgument.
  std::string trace_context;
  // Its tracestate (vendor entries, at most 32 and 512 bytes); needs a trace context. Stored as
  // the "tracestate" header.
  std::string trace_state;
  // When the event was created, if not now: an event received from another file (the NATS
  // ingester) keeps the time it was enqueued there, so that lag counts from then. Unset: the
  // time it is stored.
  std::optional<TimePoint> created_at;
  // The payload's shape version: a producer that changes what it sends bumps it, so consumers
  // not yet upgraded hold the new events instead of failing on them (ConsumerOptions::versions).
  // Positive; 0 or less is refused with InvalidArgument.
  int version = 1;
};

// A stored event.
struct Event {
  // Position in the file: strictly increasing in commit order, never reused.
  std::int64_t seq = 0;
  std::string id;
  std::string topic;
  std::string payload;
  Headers headers;
  std::string key;
  std::string dedup_key;
  TimePoint created_at;
  std::optional<TimePoint> not_before;
  // The payload's shape version as stored (NewEvent::version).
  int version = 1;

  // The producer's W3C traceparent (its "traceparent" header), if it carried one.
  std::optional<std::string> trace_context() const;
  // Its tracestate (the "tracestate" header), if any.
  std::optional<std::string> trace_state() const;
};

// Result of enqueue or receive. A duplicate is an expected outcome, not an error.
struct EnqueueResult {
  enum class Status { kStored, kDuplicateId, kDuplicateDedupKey };
  Status status = Status::kStored;
  // The stored event's ID; for a duplicate, the ID of the event already in the file.
  std::string id;
  // The stored event's seq; for a duplicate, the existing event's seq.
  std::int64_t seq = 0;

  bool duplicate() const { return status != Status::kStored; }
};

// A new time-ordered unique event ID: 26 characters of Crockford base32 (48 bits of
// milliseconds, 80 random bits), strictly increasing within this process. Thread-safe.
std::string generate_event_id(TimePoint now);

}  // namespace sluice
