// Reusing a prepared statement after a failure.
#pragma once

#include <SQLiteCpp/Statement.h>

namespace sluice {

// Makes a statement kept for reuse ready for its next run. Not SQLite::Statement::reset(): after
// a step that failed, that throws the same failure again, so one error (a full disk, a trigger
// of the app's refusing a row) would also fail the statement's next, unrelated use.
inline void rewind(SQLite::Statement& statement) noexcept { statement.tryReset(); }

}  // namespace sluice
