#include "snoozed_deliveries.hpp"

#include <SQLiteCpp/Statement.h>

#include "commit_signal.hpp"
#include "sqlite_error.hpp"
#include "write_transaction.hpp"

namespace sluice {

long long make_snoozed_due(SQLite::Database& db, const std::string& consumer, TimePoint now) {
  const long long changed = guarded("make snoozed deliveries due", [&] {
    WriteTransaction tx(db);
    // The due index's range of the consumer's pending rows due after now: a snoozed row is one
    // of them, however many rows the consumer has.
    SQLite::Statement update(
        db,
        "UPDATE sluice_deliveries INDEXED BY sluice_deliveries_due "
        "SET next_attempt_at = max(?2, coalesce((SELECT e.not_before FROM sluice_events e "
        "WHERE e.seq = event_seq), 0)), scheduled_at = ?2 "
        "WHERE consumer_id = (SELECT id FROM sluice_consumers WHERE name = ?1) "
        "AND state = 'pending' AND next_attempt_at > ?2 AND reason = 'snoozed'");
    update.bind(1, consumer);
    update.bind(2, static_cast<int64_t>(now.time_since_epoch().count()));
    const long long rows = update.exec();
    tx.commit();
    return rows;
  });
  if (changed > 0)
    if (CommitSignal* signal = CommitSignal::of(db)) signal->raise();
  return changed;
}

}  // namespace sluice
