// Read-only views of events and their delivery history, for tools and tests.
#pragma once

#include <SQLiteCpp/Database.h>

#include <optional>
#include <string>
#include <vector>

#include "sluice/event.hpp"

namespace sluice {

// One consumer's view of one event.
struct DeliveryStatus {
  std::string consumer;
  // "pending", "claimed", "retrying", "delivered", "dead" or "discarded".
  std::string state;
  int attempts = 0;
  std::optional<TimePoint> next_attempt_at;
  std::optional<TimePoint> delivered_at;
  std::string last_error;
};

// One recorded attempt that did not simply succeed at once.
struct AttemptRecord {
  std::string consumer;
  int attempt = 0;
  TimePoint at;
  // "retry", "permanent", "exhausted", "crashed", "delivered", "seen" (handled before: this
  // attempt's effect was undone), "replayed", "discarded", "backfilled".
  std::string outcome;
  std::string error;
};

struct EventFilter {
  std::string topic;
  // Only events with this ordering key, this event ID, or this dedup key.
  std::string key;
  std::string event_id;
  std::string dedup_key;
  // Only events this consumer subscribes to; with `state`, in that state for it.
  std::string consumer;
  std::string state;
  // created_at in [since, until).
  std::optional<TimePoint> since;
  std::optional<TimePoint> until;
  // Events with seq greater than `after_seq`, and less than `before_seq` unless it is 0.
  std::int64_t after_seq = 0;
  std::int64_t before_seq = 0;
  // The newest `limit` matches, newest first, instead of the oldest, oldest first: paging back
  // from the end goes by before_seq.
  bool newest_first = false;
  int limit = 100;
};

// Events matching `filter`, oldest first (newest first with filter.newest_first). Throws NotFound
// for an unknown consumer, InvalidArgument for an unknown state or a state without a consumer.
std::vector<Event> list_events(SQLite::Database& db, const EventFilter& filter);

// The event with this ID. Throws NotFound.
Event find_event(SQLite::Database& db, const std::string& event_id);

// Per subscribed consumer, the event's delivery state.
std::vector<DeliveryStatus> delivery_statuses(SQLite::Database& db, const Event& event);

// The consumers that subscribe to the event's topic but subscribed after it was enqueued, by
// name: the event is not theirs (delivery_statuses leaves them out) unless it is backfilled.
std::vector<std::string> late_subscribers(SQLite::Database& db, const Event& event);

// The event's attempt history, oldest first.
std::vector<AttemptRecord> attempt_history(SQLite::Database& db, const Event& event);

// The seq of the newest event in the file, 0 when there is none: a position to follow new
// events from (EventFilter::after_seq).
std::int64_t newest_event_seq(SQLite::Database& db);

// Claims whose lease ended before `now`: each is a worker past its expected claim duration,
// stuck or dead. A claim is taken back only once its process is gone, never for its lease.
long long claims_past_lease(SQLite::Database& db, TimePoint now);

}  // namespace sluice
