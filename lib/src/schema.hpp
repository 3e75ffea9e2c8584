// The sluice schema, in one place: every sluice_* table, index and migration.
#pragma once

#include <string>
#include <vector>

#include "sluice/clock.hpp"

namespace sluice::schema {

// sluice_deliveries.next_attempt_at of a pending row that waits for no time (held behind its key,
// unhandled here, released, backfilled, replayed): due at once whatever the clock reads, so that
// a clock set back never strands it until the clock regains the reading it was written at.
inline constexpr TimePoint kDueAtOnce{};

// migrations()[v - 1] takes a file from version v - 1 to v.
const std::vector<std::string>& migrations();

inline int current_version() { return static_cast<int>(migrations().size()); }

}  // namespace sluice::schema
