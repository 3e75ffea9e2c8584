// Retention: pruning finished history.
#pragma once

#include <SQLiteCpp/Database.h>

#include <functional>

#include "sluice/options.hpp"

namespace sluice {

struct PruneOptions {
  // Prune even if the retention is shorter than the dedup horizon.
  bool force = false;
  // Count only; write nothing.
  bool dry_run = false;
  // Events deleted per short transaction.
  int batch_size = 1000;
  // Called after each batch with the events pruned so far.
  std::function<void(long long pruned)> progress;
};

// Deletes events created before now - `retention` that every consumer has finished, with their
// deliveries, attempt history and seen IDs, in short transactions. Never deletes pending,
// retrying, claimed or dead-lettered work. Seqs are never reused after pruning.
// Throws InvalidArgument if `retention` is shorter than dedup_horizon() unless forced.
// Returns the number of events pruned (or that would be, with dry_run).
long long prune(SQLite::Database& db, Duration retention, const PruneOptions& prune_options = {},
                const Options& options = {});

// The longest retry span of any consumer recorded in the file (and of options.retry): dedup keys
// and seen IDs must be kept at least this long.
Duration dedup_horizon(SQLite::Database& db, const Options& options = {});

}  // namespace sluice
