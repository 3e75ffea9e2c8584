#include "session.hpp"

#include <unistd.h>

#include "sluice/database.hpp"
#include "usage_error.hpp"

namespace sluice::cli {

Options Session::options() const {
  Options options;
  // An operator's command gives up rather than hang behind a stuck writer.
  options.busy_timeout = std::chrono::seconds(5);
  return options;
}

void Session::require_path() const {
  if (db_path.empty()) throw UsageError("no database: pass --db FILE or set SLUICE_DB");
}

SQLite::Database Session::open() const {
  require_path();
  return open_database(db_path, options(), OpenMode::kExisting);
}

Style Session::style() const { return Style(colour_wanted(STDOUT_FILENO)); }

}  // namespace sluice::cli
