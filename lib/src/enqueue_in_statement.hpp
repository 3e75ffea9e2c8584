// Enqueue for a caller that is itself a running SQL statement (the loadable extension's
// sluice_enqueue): it joins whatever transaction that statement runs in.
#pragma once

#include <SQLiteCpp/Database.h>

#include "sluice/event.hpp"
#include "sluice/options.hpp"

namespace sluice {

// sluice::enqueue without its check for an open transaction: a trigger or a SELECT calling
// sluice_enqueue in autocommit mode runs inside the implicit transaction of its statement, which
// SQLite reports as no transaction, and the event must commit or roll back with that statement.
// Same validation, duplicates and schema check as sluice::enqueue. Not thread-safe.
EnqueueResult enqueue_in_statement(SQLite::Database& db, const NewEvent& event,
                                   const Options& options);

}  // namespace sluice
