// Backfill: re-feed one consumer from retained history.
#pragma once

#include <SQLiteCpp/Database.h>

#include <optional>
#include <string>

#include "sluice/audit.hpp"
#include "sluice/options.hpp"

namespace sluice {

// Events to re-deliver: from an event ID on, or created in [since, until). Exactly one of
// from_event_id and since must be set.
struct BackfillRange {
  std::string from_event_id;
  std::optional<TimePoint> since;
  std::optional<TimePoint> until;
};

// Re-delivers the retained events of `range` that `consumer` subscribes to, in order, clearing
// the consumer's seen marks for them in the same transaction. Returns the number of events
// queued. Throws NotFound for an unknown consumer or event.
long long backfill(SQLite::Database& db, const std::string& consumer, const BackfillRange& range,
                   const Options& options = {});
// As above, recording itself in `audit` (see AuditEntry; its action is set to "backfill"). The
// overload without it records an entry of its own from source "api".
long long backfill(SQLite::Database& db, const std::string& consumer, const BackfillRange& range,
                   const Options& options, AuditEntry& audit);

// The events backfill() would queue, without writing anything.
long long count_backfill(SQLite::Database& db, const std::string& consumer,
                         const BackfillRange& range);

}  // namespace sluice
