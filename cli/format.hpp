// Text forms of times and durations as the CLI reads and prints them.
#pragma once

#include <string>

#include "sluice/clock.hpp"

namespace sluice::cli {

// RFC 3339 in UTC with milliseconds, e.g. "2026-11-29T10:32:41.123Z"; a time before year 0 or
// after year 9999 as the first or last millisecond of them.
std::string format_time(TimePoint t);

// Parses RFC 3339: "2026-11-29T10:32:41Z", with optional fraction and a Z or ±hh:mm offset
// ('t', 'z' and a space separator accepted too). Throws UsageError naming the text.
TimePoint parse_time(const std::string& text);

// As a duration reads: "250ms" under a second, "26.8s" (tenths, rounded down) under a minute,
// else at most two of the largest units, rounded down: "4m12s", "1h30m", "7d".
std::string format_duration(Duration d);

// One or more <integer><unit> parts, unit one of ms, s, m, h, d: "30s", "15m", "12h", "7d",
// "1h30m". Throws UsageError naming the text.
Duration parse_duration(const std::string& text);

// A point in time given either as RFC 3339 or as a duration meaning that long before `now`
// ("2h" is two hours ago). Throws UsageError.
TimePoint parse_time_or_ago(const std::string& text, TimePoint now);

}  // namespace sluice::cli
