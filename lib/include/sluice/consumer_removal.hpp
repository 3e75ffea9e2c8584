// Removing a consumer that is no longer run, with all its state, so it stops holding back prune.
#pragma once

#include <SQLiteCpp/Database.h>

#include <optional>
#include <string>
#include <vector>

#include "sluice/audit.hpp"
#include "sluice/options.hpp"

namespace sluice {

struct RemoveConsumerOptions {
  // Remove even while a worker of the consumer looks alive.
  bool force = false;
  // Count only; write nothing.
  bool dry_run = false;
  // A sign of work this recent (a delivery, a failure, a claim, or the consumer's creation)
  // counts as a live worker.
  Duration active_within = std::chrono::hours(1);
};

// What remove_consumer removed, or would remove with dry_run.
struct ConsumerRemoval {
  std::string consumer;
  std::vector<std::string> topics;
  // Delivery rows: pending, claimed, dead and discarded.
  long long deliveries = 0;
  // Of those, dead letters not replayed or discarded.
  long long dead_letters = 0;
  // Seen IDs (the consumer's inbox).
  long long inbox = 0;
  long long claims = 0;
  // Rows of attempt history.
  long long attempts = 0;
  // The newest sign of a worker of the consumer; unset when there is none.
  std::optional<TimePoint> last_active;
  // Why a worker of the consumer looks alive, "" when none does or the removal was forced: with
  // dry_run, why the removal would be refused (a preview is never refused).
  std::string live_worker;
  // False with dry_run.
  bool removed = false;
};

// Removes consumer `name` and all its state: subscriptions, deliveries (dead letters included),
// seen IDs, claims and attempt history, in short transactions, the consumer row last (a removal
// cut short by a crash leaves the consumer in place, to be removed again). Its attempt history
// goes too: a later consumer of the same name starts afresh (under a new id, never reused). The
// removal is logged. Refuses, throwing InvalidArgument that says why, while a worker of the
// consumer looks alive (a claim whose process runs, or a sign of work within active_within) unless
// forced; a dry run is not refused but says why in ConsumerRemoval::live_worker. A worker idle for
// longer is not seen: stop the consumer's workers first, as one still running fails on its next
// claim. Throws NotFound for an unknown consumer.
ConsumerRemoval remove_consumer(SQLite::Database& db, const std::string& name,
                                const RemoveConsumerOptions& removal = {},
                                const Options& options = {});
// As above, recording itself in `audit` (see AuditEntry; its action is set to "remove", its count
// to the delivery rows deleted). The overload without it records an entry of its own from source
// "api". A dry run records nothing.
ConsumerRemoval remove_consumer(SQLite::Database& db, const std::string& name,
                                const RemoveConsumerOptions& removal, const Options& options,
                                AuditEntry& audit);

}  // namespace sluice
