// What a Python or Node test of SQL handlers asks of a connection beside its manual clock
// (sluice_clock_set): when the next retry or delayed event falls due, so that the test moves the
// clock there and claims again, and an event's state for a consumer (docs/sql.md, "Testing your
// handlers").
#pragma once

#include <optional>
#include <string>

#include "sql_connection.hpp"

namespace sluice::sqlext {

// The earliest time after the connection's clock at which work of `consumer` (every consumer
// when empty) that waits for a time falls due: a retry, a snooze, an event's not_before.
// nullopt when none waits. Throws NotFound for an unknown consumer.
std::optional<TimePoint> next_due(SqlConnection& c, const std::string& consumer);

// The event's state for the consumer, as a JSON object: {"state": "pending" | "claimed" |
// "retrying" | "delivered" | "dead" | "discarded", "attempts", "next_attempt_at" (ms, null unless
// it waits), "delivered_at" (ms, null until delivered), "last_error" (null when none)}. Throws
// NotFound for an unknown event or consumer, or an event that is not the consumer's (another
// topic, or enqueued before the consumer subscribed).
std::string delivery_state(SqlConnection& c, const std::string& consumer,
                           const std::string& event_id);

}  // namespace sluice::sqlext
