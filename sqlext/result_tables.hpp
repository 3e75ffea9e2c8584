// Read-only tables for an operator at the sqlite3 prompt: sluice_stats (one row per consumer,
// as consumer_stats) and sluice_dead_letters (every dead letter, discarded ones included, as
// list_dead_letters).
#pragma once

#include <sqlite3.h>

namespace sluice::sqlext {

// Registers both as eponymous virtual tables on `db`. Throws DatabaseError.
void register_tables(sqlite3* db);

}  // namespace sluice::sqlext
