// Dead letters: (event, consumer) pairs that failed for good, and the operations on them.
#pragma once

#include <SQLiteCpp/Database.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sluice/audit.hpp"
#include "sluice/clock.hpp"
#include "sluice/options.hpp"

namespace sluice {

struct DeadLetter {
  std::string event_id;
  std::int64_t event_seq = 0;
  std::string consumer;
  std::string topic;
  std::string key;
  // "permanent" (handler threw PermanentError), "exhausted" (max attempts spent) or "crashed"
  // (the process died during its last attempt).
  std::string reason;
  std::string last_error;
  int attempts = 0;
  TimePoint first_failed_at;
  TimePoint last_failed_at;
  // Set once discarded: the dead letter stays as an audit record with the operator's note.
  bool discarded = false;
  std::string note;
  // The trace ID of the event's W3C traceparent (its 32 hex digits), empty without one.
  std::string trace_id;
};

// Which dead letters an operation applies to. Empty fields match everything.
struct DeadLetterFilter {
  std::vector<std::string> event_ids;
  std::string consumer;
  std::string topic;
  // last_failed_at in [since, until).
  std::optional<TimePoint> since;
  std::optional<TimePoint> until;
  // Substring of last_error.
  std::string error_contains;
  // Include discarded (audit) records; list only.
  bool include_discarded = false;
};

// Dead letters matching `filter`, oldest failure first. Throws NotFound for an unknown consumer.
std::vector<DeadLetter> list_dead_letters(SQLite::Database& db, const DeadLetterFilter& filter);

// Called after each short transaction of a replay or discard with how many dead letters it has
// changed so far.
using DeadLetterProgress = std::function<void(long long changed)>;

// Puts the dead letters matching `filter` when the call starts back to pending with attempts
// reset, in short transactions, and returns how many it replayed. It walks them once in event
// order, up to the highest event seq that matched at its start, so it returns even while a worker
// keeps dead-lettering the replayed events again: each (event, consumer) pair is replayed at most
// once per call. The keys they parked are unparked. `progress`, when set, is called after each
// transaction.
long long replay_dead_letters(SQLite::Database& db, const DeadLetterFilter& filter,
                              const Options& options = {});
long long replay_dead_letters(SQLite::Database& db, const DeadLetterFilter& filter,
                              const Options& options, const DeadLetterProgress& progress);
// As above, recording itself in `audit` (see AuditEntry; its action is set to "replay"). The
// overloads without it record an entry of their own from source "api".
long long replay_dead_letters(SQLite::Database& db, const DeadLetterFilter& filter,
                              const Options& options, const DeadLetterProgress& progress,
                              AuditEntry& audit);

// Marks the dead letters matching `filter` when the call starts discarded with `note`
// (non-empty) as an audit record, bounded like replay_dead_letters: dead letters made while it
// runs are left alone. Their keys are unparked. Returns how many it discarded.
long long discard_dead_letters(SQLite::Database& db, const DeadLetterFilter& filter,
                               const std::string& note, const Options& options = {});
long long discard_dead_letters(SQLite::Database& db, const DeadLetterFilter& filter,
                               const std::string& note, const Options& options,
                               const DeadLetterProgress& progress);
// As above, recording itself in `audit` (see AuditEntry; its action is set to "discard", its note
// to `note`). The overloads without it record an entry of their own from source "api".
long long discard_dead_letters(SQLite::Database& db, const DeadLetterFilter& filter,
                               const std::string& note, const Options& options,
                               const DeadLetterProgress& progress, AuditEntry& audit);

}  // namespace sluice
