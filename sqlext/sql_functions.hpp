// The SQL functions and tables the extension registers on a connection (see docs/sql.md).
#pragma once

#include <sqlite3.h>

#include <string>

namespace sluice::sqlext {

// Registers every sluice_* function and table on `db` and gives it sluice's busy handling if the
// file has a current sluice schema. Returns SQLITE_OK, or an error code with `error` set.
int register_functions(sqlite3* db, std::string& error);

}  // namespace sluice::sqlext
