// The clock a connection was opened with, so that calls taking Options only for the clock use it
// when their Options name none: a test sets its ManualClock once, in open_database.
#pragma once

#include <SQLiteCpp/Database.h>

#include <memory>

#include "sluice/clock.hpp"
#include "sluice/options.hpp"

namespace sluice {

// Records `clock` (null: none) as `db`'s clock until the connection closes. Thread-safe.
void remember_clock(SQLite::Database& db, std::shared_ptr<Clock> clock);

// `options.clock` if set, else the clock recorded for `db`, else the system clock. Thread-safe.
std::shared_ptr<Clock> clock_for(SQLite::Database& db, const Options& options);

}  // namespace sluice
