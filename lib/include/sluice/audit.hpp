// The audit log: operator actions (replay, discard, backfill, prune) recorded in the file.
#pragma once

#include <SQLiteCpp/Database.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/clock.hpp"
#include "sluice/options.hpp"

namespace sluice {

// One recorded action.
struct AuditEntry {
  // Assigned by record_audit, increasing.
  std::int64_t id = 0;
  // When the action finished; record_audit stamps it with the connection's clock.
  TimePoint at;
  // "replay" (dead letters), "discard" (dead letters), "backfill" or "prune".
  std::string action;
  // What the action was applied to, as a JSON object (e.g. {"consumer":"billing"}).
  std::string filter = "{}";
  // How many dead letters or events it changed.
  long long count = 0;
  // The operator's note (required for a discard), empty when none.
  std::string note;
  // Where it came from: "cli", "console", or "api" (an app's own call).
  std::string source = "api";
};

// Appends `entry` (its id and at are ignored) in its own short write transaction, or in the
// caller's when one is open, and returns its id. Throws InvalidArgument for an unknown action or
// source or a filter that is not a JSON object.
std::int64_t record_audit(SQLite::Database& db, const AuditEntry& entry,
                          const Options& options = {});

// Up to `limit` entries with id greater than `after_id`, oldest first: a keyset page. Reads
// only. Throws InvalidArgument for a limit under 1.
std::vector<AuditEntry> list_audit(SQLite::Database& db, std::int64_t after_id = 0,
                                   int limit = 100);

}  // namespace sluice
