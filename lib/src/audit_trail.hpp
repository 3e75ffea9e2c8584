// The audit entry of an action that changes the file in several short transactions, kept in step
// with it: written in the transaction of the action's first change and brought up to date in the
// transaction of each later one. A crash (SIGKILL mid-replay) leaves the entry counting exactly
// the changes that committed, never a change without its record.
#pragma once

#include <SQLiteCpp/Database.h>

#include <cstdint>
#include <string>

#include "sluice/audit.hpp"
#include "sluice/clock.hpp"

namespace sluice {

// Not thread-safe: one action on one connection.
class AuditTrail {
 public:
  // Keeps `entry` (action, filter, note and source set; id 0 until its first change committed)
  // in step. With `filter` given, an entry whose filter is "{}" records that instead.
  // Throws InvalidArgument for an unknown action or source or a filter that is no JSON object.
  AuditTrail(AuditEntry& entry, const std::string& filter = "{}");

  // In the open write transaction that made `changed` changes at `now`: writes the entry, or adds
  // them to its count.
  void record(SQLite::Database& db, long long changed, TimePoint now);
  // After that transaction committed: the entry has its id and count.
  void committed();
  // After the action's last transaction: an action that changed nothing is on record too, with
  // count 0, written in a transaction of its own.
  void finish(SQLite::Database& db, TimePoint now);

 private:
  AuditEntry& entry_;
  std::int64_t written_id_ = 0;
  long long written_count_ = 0;
};

// Throws InvalidArgument for an unknown action or source or a filter that is no JSON object.
void validate_audit_entry(const AuditEntry& entry);

}  // namespace sluice
