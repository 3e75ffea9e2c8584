// The extension's SQLite is the host's. Every sqlite3_* function the engine, SQLiteCpp and the
// extension call is defined in sqlite_api.cpp as a forwarder to the host's API table
// (sqlite3_api, set by the entry point), and the module's version script keeps those definitions
// local: the module links no libsqlite3, so a host that bundles its own SQLite (Node's
// better-sqlite3) gets no second, unrelated SQLite in its process, and a host that shares the
// system's (Python, the sqlite3 shell) finds its own functions unchanged.
#pragma once

#include <SQLiteCpp/Database.h>
#include <sqlite3.h>

namespace sluice::sqlext {

// A SQLite::Database over `db`, a connection the host opened and keeps: SQLiteCpp 3.2.1 can only
// open connections itself, so the forwarder of sqlite3_open_v2 hands it `db` back for the name
// this makes up, and the forwarder of sqlite3_close leaves `db` open when the returned object is
// destroyed. The object must not outlive the host's connection. Thread-safe.
SQLite::Database adopt_connection(sqlite3* db);

}  // namespace sluice::sqlext
