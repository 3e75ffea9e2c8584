// Stored times: integer milliseconds, and RFC 3339 text (UTC, millisecond precision).
#pragma once

#include <cstdint>
#include <string>

#include "sluice/clock.hpp"

namespace sluice {

// Milliseconds since the epoch: how sluice stores a time.
inline std::int64_t to_millis(TimePoint t) { return t.time_since_epoch().count(); }

// "2026-11-29T10:27:16.123Z"
std::string format_rfc3339(TimePoint t);

// A duration in its largest whole unit: "1h", "90s", "250ms" (days, hours, minutes, seconds,
// milliseconds), for messages a person reads.
std::string format_duration(Duration d);

}  // namespace sluice
