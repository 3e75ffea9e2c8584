// How the CLI words a consumer's pause, for `stats`, `consumer list` and `check`.
#pragma once

#include <string>

#include "sluice/stats.hpp"

namespace sluice::cli {

// "paused since 2026-12-02T10:00:00.000Z until 2026-12-02T11:00:00.000Z by operator: mail API
// down" ("until resumed" when it has no end; no ": note" when none); "running" when not paused.
// The note is made printable.
std::string describe_pause(const ConsumerStats& stats);

}  // namespace sluice::cli
