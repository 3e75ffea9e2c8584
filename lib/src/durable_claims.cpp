#include "durable_claims.hpp"

#include <sqlite3.h>

#include "sluice/error.hpp"

namespace sluice {
namespace {

constexpr int kFull = 2;  // PRAGMA synchronous: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA

bool on_file(SQLite::Database& db) {
  const char* file = sqlite3_db_filename(db.getHandle(), "main");
  return file != nullptr && *file != '\0';
}

// PRAGMA synchronous reads when it is prepared, not when it is stepped: a statement kept
// prepared would read the level stale. An SQL claimer's app may change it at any time.
int synchronous_level(SQLite::Database& db) { return db.execAndGet("PRAGMA synchronous").getInt(); }

// Syncs the WAL through the connection's own file handle, as a FULL commit would have: through
// the VFS the connection uses (a test's power-cut shim sees it), and with no descriptor of our
// own on the file (closing one would drop the process's POSIX locks on it). Outside WAL mode the
// commit is in the main file, which is synced instead.
void sync_log(SQLite::Database& db) {
  sqlite3* handle = db.getHandle();
  sqlite3_file* file = nullptr;
  int rc = sqlite3_file_control(handle, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file);
  if (rc != SQLITE_OK || file == nullptr || file->pMethods == nullptr) {
    file = nullptr;
    rc = sqlite3_file_control(handle, "main", SQLITE_FCNTL_FILE_POINTER, &file);
  }
  if (rc == SQLITE_OK && file != nullptr && file->pMethods != nullptr) {
    rc = file->pMethods->xSync(file, SQLITE_SYNC_NORMAL);
  }
  if (rc != SQLITE_OK) {
    throw DatabaseError("sluice: syncing the claim's commit before handing its events out failed",
                        rc);
  }
}

}  // namespace

DurableClaims::DurableClaims(SQLite::Database& db, Connection connection)
    : db_(db),
      on_file_(on_file(db)),
      shared_(connection == Connection::kShared),
      data_version_(db),
      newest_event_(db, "SELECT coalesce(max(seq), 0) FROM sluice_events") {}

void DurableClaims::claimed(std::int64_t newest_seq) {
  if (!on_file_) return;
  const long long version = data_version_.read();
  if (!shared_ && synced_ && synced_->data_version == version &&
      newest_seq <= synced_->newest_seq) {
    return;
  }
  // At FULL the claim's commit synced the WAL, but another connection may have committed since
  // at a lower level: nothing is remembered, and the next claim's commit syncs again.
  if (synchronous_level(db_) >= kFull) {
    synced_.reset();
    return;
  }
  // Read before the sync (as the data version was), so that whatever it saw is in the WAL synced.
  newest_event_.reset();
  newest_event_.executeStep();
  const std::int64_t newest = newest_event_.getColumn(0).getInt64();
  newest_event_.reset();
  sync_log(db_);
  synced_ = Synced{version, newest};
}

}  // namespace sluice
