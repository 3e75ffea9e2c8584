// The attempt log of a delivery row (sluice_deliveries.history, sluice_attempts.earlier): a JSON
// array of [attempt, at, outcome, error] entries, oldest first (see schema.cpp, version 3).
#pragma once

#include <string>
#include <string_view>

#include "sluice/clock.hpp"

namespace sluice {

// Replaces `out` with the JSON text of a log of one entry; an empty `error` is written as null.
// Built by hand into a reused buffer: SQLite's json_array() cost a failure a sixth of its price.
void write_attempt_log(std::string& out, int attempt, TimePoint at, std::string_view outcome,
                       std::string_view error);

}  // namespace sluice
