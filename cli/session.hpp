// What every command shares: the database named by --db or SLUICE_DB, and the exit code the
// command chose.
#pragma once

#include <SQLiteCpp/Database.h>

#include <string>

#include "sluice/options.hpp"
#include "style.hpp"

namespace sluice::cli {

// Not thread-safe: filled in by the parser, then used by the one command that runs.
struct Session {
  std::string db_path;
  // --busy-timeout: how long a command waits for another connection's lock.
  Duration busy_timeout = Options{}.busy_timeout;
  // 0 unless the command reports "not found" or warnings (1).
  int exit_code = 0;

  // Throws UsageError when no file was named.
  void require_path() const;
  // The options of every connection the CLI opens.
  Options options() const;
  // The file's sluice schema version, read without writing. Throws UsageError when no file was
  // named, FileNotReady when it has no sluice tables, and the library's errors (NotFound for a
  // missing file, NotADatabaseError, SchemaVersionError for a newer schema, ...).
  int sluice_version() const;
  // Opens the existing file read-only (never writes, never migrates) for a command that only
  // reads. Throws as sluice_version(), and FileNotReady for an older schema.
  SQLite::Database open_read_only() const;
  // Throws as open_read_only() would for the file `db` (a connection open_read_only() opened
  // earlier) as it is now: FileNotReady for an older schema, SchemaVersionError for a newer.
  void check_read_only(SQLite::Database& db) const;
  // Opens the existing file for a command that writes; never creates one, never migrates it.
  // Throws as open_read_only(), having written nothing.
  SQLite::Database open() const;
  // Colour for standard output.
  Style style() const;
};

}  // namespace sluice::cli
