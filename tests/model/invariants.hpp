// The comparisons made after every step of a model sequence: what the engine's file shows
// against what the reference model says it must.
#pragma once

#include <SQLiteCpp/Database.h>

#include <vector>

#include "reference_model.hpp"
#include "sequence_config.hpp"
#include "sluice/options.hpp"
#include "violation.hpp"

namespace sluice::model {

// The dead letters (not discarded) are exactly the model's dead pairs, with reason and attempts.
// One the engine made for want of a handler is named as such.
void check_dead_letters(SQLite::Database& db, const ReferenceModel& model,
                        std::vector<Violation>& out);

// Each in-transaction consumer's applications in model_applied are the model's deliveries: an
// event applied twice only if backfill asked for it, and no rolled-back write left behind.
void check_ledger(SQLite::Database& db, const ReferenceModel& model, const SequenceConfig& config,
                  std::vector<Violation>& out);

// consumer_stats agrees with the model: pending, dead, parked keys, delivered and retry totals,
// and nothing claimed between steps.
void check_stats(SQLite::Database& db, const ReferenceModel& model, const SequenceConfig& config,
                 const Options& options, std::vector<Violation>& out);

// After run_until_idle() on `instance`: nothing it handles is left that must have run by `now`.
// One the file schedules after `now` though the clock was set back since is named as stranded.
void check_drained(SQLite::Database& db, const ReferenceModel& model,
                   const InstanceConfig& instance, TimePoint now, std::vector<Violation>& out);

// Pairs of a topic some instance has no handler for: an instance without the handler spends no
// attempt on them.
void check_unhandled_attempts(SQLite::Database& db, const ReferenceModel& model,
                              const SequenceConfig& config, std::vector<Violation>& out);

}  // namespace sluice::model
