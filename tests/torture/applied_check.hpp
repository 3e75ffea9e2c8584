// The ledger check: compares what the producer was told is committed with what the consumers'
// handlers applied to the domain table.
#pragma once

#include <SQLiteCpp/Database.h>

#include <string>
#include <vector>

namespace sluice::torture {

// The domain table every torture handler writes one row into per event it applies. No unique
// constraint: a double application must show as a second row, not be hidden by a conflict.
inline constexpr const char* kAppliedTableSql =
    "CREATE TABLE IF NOT EXISTS torture_applied("
    "n INTEGER PRIMARY KEY AUTOINCREMENT, consumer TEXT NOT NULL, event_id TEXT NOT NULL, "
    "seq INTEGER NOT NULL, key TEXT NOT NULL)";

// The app's own table the producer writes in the same transaction as each enqueue.
inline constexpr const char* kOrdersTableSql =
    "CREATE TABLE IF NOT EXISTS torture_orders(event_id TEXT NOT NULL)";

struct AppliedCheck {
  // Acknowledged events.
  long long events = 0;
  // (consumer, acknowledged event) pairs with no applied row.
  long long lost = 0;
  // Applied rows beyond the first per (consumer, event).
  long long double_applied = 0;
  // Applied rows naming an event the producer never tried to enqueue.
  long long unexpected = 0;
  // Within a key, rows of an ordered consumer applied after a row of a later event.
  long long inversions = 0;
  // PRAGMA integrity_check's answer, "ok" when sound.
  std::string integrity;

  bool pass() const {
    return lost == 0 && double_applied == 0 && unexpected == 0 && inversions == 0 &&
           integrity == "ok";
  }
};

// `acked`: IDs whose commit returned (the durable ledger). `intended`: every ID the producer
// tried to enqueue. Every consumer in `consumers` must have applied each acked event once;
// `ordered` consumers are also checked for per-key inversions.
AppliedCheck check_applied(SQLite::Database& db, const std::vector<std::string>& acked,
                           const std::vector<std::string>& intended,
                           const std::vector<std::string>& consumers,
                           const std::vector<std::string>& ordered);

}  // namespace sluice::torture
