// The audit log: operator actions (replay, discard, backfill, prune, consumer removal) recorded in
// the file. Each of those library calls records itself, in the same transaction as each of its
// changes (see AuditEntry); record_audit is for an app's own actions.
#pragma once

#include <SQLiteCpp/Database.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/clock.hpp"
#include "sluice/options.hpp"

namespace sluice {

// One recorded action. Passed to an action (replay_dead_letters, discard_dead_letters,
// backfill, prune, remove_consumer), it is the entry the action keeps in step with its changes:
// written in the transaction of its first change (id set once that committed), its count raised
// in the transaction of each later one, so a crash mid-action leaves it counting exactly what
// committed. Pass the same entry to every call of one operator action (a paced replay, one call
// per consumer) to record them as one entry. Not thread-safe.
struct AuditEntry {
  // Assigned when written, increasing; 0 until then.
  std::int64_t id = 0;
  // When the action finished (an action in several transactions: its last change so far),
  // stamped with the connection's clock.
  TimePoint at;
  // "replay" (dead letters), "discard" (dead letters), "backfill", "prune", "remove" (a
  // consumer), "pause" or "resume" (a consumer, pause.hpp). Set by the action itself.
  std::string action;
  // What the action was applied to, as a JSON object (e.g. {"consumer":"billing"}); "{}" given
  // to an action records the action's own arguments.
  std::string filter = "{}";
  // How many dead letters or events it changed; for "remove", the consumer's delivery rows
  // (dead letters among them) it deleted.
  long long count = 0;
  // The operator's note (required for a discard), empty when none.
  std::string note;
  // Where it came from: "cli", "console", "sql" (the loadable extension's functions) or "api"
  // (an app's own call).
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
