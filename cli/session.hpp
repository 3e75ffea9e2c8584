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
  // 0 unless the command reports "not found" or warnings (1).
  int exit_code = 0;

  // Throws UsageError when no file was named.
  void require_path() const;
  // The options of every connection the CLI opens.
  Options options() const;
  // Opens the existing file for sluice; never creates one. Throws UsageError when no file was
  // named, and the library's errors (NotFound for a missing file, NotADatabaseError, ...).
  SQLite::Database open() const;
  // Colour for standard output.
  Style style() const;
};

}  // namespace sluice::cli
