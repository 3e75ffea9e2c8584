// Retention: pruning finished history.
#pragma once

#include <SQLiteCpp/Database.h>

#include <functional>
#include <string>
#include <vector>

#include "sluice/audit.hpp"
#include "sluice/options.hpp"

namespace sluice {

// Why prune keeps events older than its retention.
enum class HoldReason {
  // Past the consumer's cursor: no worker of it has taken them yet. A consumer that is no longer
  // run holds every later event of the file this way (see remove_consumer).
  kCursor,
  // Inside a claim of a worker of the consumer that has not finished (or whose process died and
  // no worker of the consumer has recovered it).
  kClaim,
  // A pending or claimed delivery: retrying, delayed, held back behind its key, or waiting for a
  // handler.
  kUnfinished,
  // A dead letter not yet replayed or discarded.
  kDeadLetter,
};

// "cursor", "claim", "unfinished" or "dead_letter".
const char* to_string(HoldReason reason);

// One consumer keeping events older than a retention, for one reason.
struct RetentionHold {
  std::string consumer;
  HoldReason reason = HoldReason::kCursor;
  // Events created before the retention's cutoff that it keeps.
  long long events = 0;
  // Creation time of the oldest of them.
  TimePoint oldest;
};

struct PruneOptions {
  // Prune even if the retention is shorter than the dedup horizon.
  bool force = false;
  // Count only; write nothing.
  bool dry_run = false;
  // Events deleted per short transaction.
  int batch_size = 1000;
  // Called after each batch with the events pruned so far.
  std::function<void(long long pruned)> progress;
  // When set, filled once the prune is done with what kept older events (retention_holds()).
  std::vector<RetentionHold>* held_back = nullptr;
};

// Deletes events created before now - `retention` that every consumer has finished, with their
// deliveries, attempt history and seen IDs, in short transactions. Never deletes pending,
// retrying, claimed or dead-lettered work. Seqs are never reused after pruning.
// Throws InvalidArgument if `retention` is shorter than dedup_horizon() unless forced.
// Returns the number of events pruned (or that would be, with dry_run).
long long prune(SQLite::Database& db, Duration retention, const PruneOptions& prune_options = {},
                const Options& options = {});
// As above, recording itself in `audit` (see AuditEntry; its action is set to "prune"). The
// overload without it records an entry of its own from source "api".
long long prune(SQLite::Database& db, Duration retention, const PruneOptions& prune_options,
                const Options& options, AuditEntry& audit);

// Which consumers keep events created before now - `older_than` from prune, and why: one entry
// per (consumer, reason) that keeps at least one, most events first. An event may be kept for
// several. Reads only.
std::vector<RetentionHold> retention_holds(SQLite::Database& db, Duration older_than,
                                           const Options& options = {});

// The entries of retention_holds() for HoldReason::kCursor and kClaim only: what consumers whose
// workers stopped taking events keep. Reads no delivery row, so a file with many dead letters
// answers it as fast as one with none (`sluice check`'s retention rule). Reads only.
std::vector<RetentionHold> pinned_holds(SQLite::Database& db, Duration older_than,
                                        const Options& options = {});

// The longest retry span of any consumer recorded in the file (and of options.retry): dedup keys
// and seen IDs must be kept at least this long.
Duration dedup_horizon(SQLite::Database& db, const Options& options = {});

}  // namespace sluice
