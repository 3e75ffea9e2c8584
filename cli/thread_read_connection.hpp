// The console's read-only connection, one per server thread, kept from request to request.
#pragma once

#include <SQLiteCpp/Database.h>

#include "session.hpp"

namespace sluice::cli {

// This thread's read-only connection to `session`'s file, as Session::open_read_only() opens
// one, but kept for the thread's next call instead of closed: a connection opened per request
// parsed the schema and read the file's upper pages back on every request, while a kept one
// keeps its page cache while nothing writes. SQLite sees other connections' commits at each read
// transaction, so nothing is stale. No memory map: each connection maps the file on its own, so
// a request served by another thread than the last paid every page fault again (a dead-letter
// page of a 1M-event file took 180 ms mapped, 120 ms read).
//
// Opened again when the path names another file than before (replaced, restored from a
// backup), and the schema version is checked on every call, so a file migrated meanwhile is
// refused as open_read_only() refuses it. Throws as open_read_only().
//
// Thread-safe: each thread has connections of its own (thread_local), closed by that thread
// when it ends; a few files at most are kept per thread, the least recently used closed first.
SQLite::Database& thread_read_connection(const Session& session);

}  // namespace sluice::cli
