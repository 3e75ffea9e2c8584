// RFC 3339 text for stored times (UTC, millisecond precision).
#pragma once

#include <string>

#include "sluice/clock.hpp"

namespace sluice {

// "2026-11-29T10:27:16.123Z"
std::string format_rfc3339(TimePoint t);

}  // namespace sluice
