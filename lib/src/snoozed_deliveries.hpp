// Snoozed deliveries made due before their time: a relay's events snoozed while the broker was
// unreachable wait no longer once it answers again.
#pragma once

#include <SQLiteCpp/Database.h>

#include <string>

#include "sluice/clock.hpp"

namespace sluice {

// Makes every delivery of consumer `consumer` that a handler snoozed (Outcome::snooze) and that
// is not yet due, due at `now` (never before its event's not-before time), and wakes this
// process's workers of the file. Attempts and everything else stay as they were. Returns how many
// deliveries it changed; 0 when the consumer is unknown. Throws sluice::Error on storage errors.
long long make_snoozed_due(SQLite::Database& db, const std::string& consumer, TimePoint now);

}  // namespace sluice
