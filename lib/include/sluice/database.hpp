// Opening a file for sluice: pragmas, schema creation and migration.
#pragma once

#include <SQLiteCpp/Database.h>

#include <string>

#include "sluice/options.hpp"

namespace sluice {

// The sluice schema version this library writes.
int schema_version();

enum class OpenMode {
  // Create the file if it does not exist.
  kCreate,
  // The file must exist; NotFound otherwise. Used by tools that must never create a file.
  kExisting,
  // The file must exist; opened read-only (SQLITE_OPEN_READONLY): no pragma that writes, no
  // journal mode change, no schema created or migrated, whatever sluice version the file holds
  // (see stored_schema_version: 0 for a file without sluice tables). For tools that only read.
  kReadOnly,
};

// Opens `path` (a file or ":memory:") for sluice: WAL journal (files only), the busy timeout and
// synchronous level from `options`. Creates or migrates the sluice schema in its
// own transaction (kReadOnly: only the busy timeout; nothing written). Errors name the path.
// Throws NotFound (kExisting or kReadOnly, and no file), NotADatabaseError,
// CorruptDatabaseError, SchemaVersionError (file newer than the library) or DatabaseError.
// The returned connection belongs to the calling thread's use only. Records `options.clock` as
// the connection's clock until it closes: calls on it whose Options name no clock use it.
SQLite::Database open_database(const std::string& path, const Options& options = {},
                               OpenMode mode = OpenMode::kCreate);

// Applies sluice's pragmas (busy handling, synchronous, WAL for files) to a connection the app
// opened itself, and records `options.clock` (null: none) as its clock, as open_database does.
void configure_connection(SQLite::Database& db, const Options& options = {});

// Creates or migrates the sluice schema on `db`. Throws TransactionError if a transaction is
// open on `db` and work is needed, SchemaVersionError for a newer schema. Returns the version
// found before migration (0 for a file without sluice tables).
int ensure_schema(SQLite::Database& db);

// The sluice schema version stored in `db`, 0 if it has no sluice tables. Never writes.
int stored_schema_version(SQLite::Database& db);

}  // namespace sluice
