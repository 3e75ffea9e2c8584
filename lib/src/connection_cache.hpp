// An object sluice keeps for an app's connection (prepared statements) until the connection
// closes, without taking over any of the connection's hooks.
#pragma once

#include <SQLiteCpp/Database.h>
#include <sqlite3.h>

#include <functional>
#include <memory>

namespace sluice {

// What a connection's cache holds; destroyed while the connection closes.
class ConnectionCached {
 public:
  virtual ~ConnectionCached() = default;
};

// The object cached for `db` under `key` (the address of something of its user's), made by `make`
// on the first call for that key on the connection. SQLite refuses to close a connection while
// statements are prepared on it, but disconnects the connection's virtual tables just before it
// checks: a module registered on the connection ("sluice_connection_cache", eponymous, no rows)
// destroys the connection's objects then, so a later connection at the same address starts with
// none. Thread-safe across connections; one connection's objects are used by its thread only.
ConnectionCached& connection_cached(SQLite::Database& db, const void* key,
                                    const std::function<std::unique_ptr<ConnectionCached>()>& make);

// The object cached for `db` under `key`, or null. Thread-safe.
ConnectionCached* find_connection_cached(SQLite::Database& db, const void* key);

// As above, for a connection known by its handle alone (the C API's: the app opened it).
ConnectionCached& connection_cached(sqlite3* handle, const void* key,
                                    const std::function<std::unique_ptr<ConnectionCached>()>& make);
ConnectionCached* find_connection_cached(sqlite3* handle, const void* key);

}  // namespace sluice
