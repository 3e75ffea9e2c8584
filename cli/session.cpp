#include "session.hpp"

#include <unistd.h>

#include "file_not_ready.hpp"
#include "sluice/database.hpp"
#include "sluice/error.hpp"
#include "usage_error.hpp"

namespace sluice::cli {

Options Session::options() const {
  Options options;
  options.busy_timeout = busy_timeout;
  return options;
}

void Session::require_path() const {
  if (db_path.empty()) throw UsageError("no database: pass --db FILE or set SLUICE_DB");
}

namespace {

// The sluice schema version of `db` (the file at `path`); FileNotReady if it has none.
int sluice_version_of(SQLite::Database& db, const std::string& path) {
  const int version = stored_schema_version(db);
  if (version == 0) {
    throw FileNotReady(path + " is not a sluice file (no sluice tables); run `sluice init`");
  }
  return version;
}

}  // namespace

int Session::sluice_version() const {
  require_path();
  SQLite::Database db = open_database(db_path, options(), OpenMode::kReadOnly);
  return sluice_version_of(db, db_path);
}

SQLite::Database Session::open_read_only() const {
  require_path();
  SQLite::Database db = open_database(db_path, options(), OpenMode::kReadOnly);
  check_read_only(db);
  return db;
}

void Session::check_read_only(SQLite::Database& db) const {
  const int version = sluice_version_of(db, db_path);
  if (version > schema_version()) throw SchemaVersionError(version, schema_version());
  if (version < schema_version()) {
    throw FileNotReady(db_path + ": the file's schema version " + std::to_string(version) +
                       " is older than this sluice's " + std::to_string(schema_version()) +
                       "; run `sluice migrate` to upgrade it (apps of an older sluice then "
                       "refuse it)");
  }
}

SQLite::Database Session::open() const {
  open_read_only();  // refuses, writing nothing, a file this command would have to change first
  return open_database(db_path, options(), OpenMode::kExisting);
}

Style Session::style() const { return Style(colour_wanted(STDOUT_FILENO)); }

}  // namespace sluice::cli
