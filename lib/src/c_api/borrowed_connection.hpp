// The engine, written against SQLiteCpp, run on a connection the app opened and owns: the C API
// hands sluice a bare sqlite3*.
#pragma once

#include <SQLiteCpp/Database.h>
#include <sqlite3.h>

namespace sluice::c_api {

// A SQLite::Database over `handle` that never closes it, made on the first call for the
// connection and kept until the connection closes (the connection cache learns of the close),
// so objects the engine caches for the connection may keep a reference to it. Thread-safe
// across connections; use it on the thread that uses `handle`.
SQLite::Database& borrowed_database(sqlite3* handle);

}  // namespace sluice::c_api
