#include "idle_check.hpp"

#include "json_string.hpp"
#include "rewind.hpp"
#include "time_format.hpp"

namespace sluice {

IdleCheck::IdleCheck(SQLite::Database& db, std::string owner,
                     const std::vector<std::int64_t>& consumer_ids)
    : query_(db,
             // ?1 the consumers as a JSON array, ?2 when the last look began, ?3 the owner. A
             // join rather than `consumer_id IN (SELECT ...)`, whose temporary table cost a
             // 64 KiB page buffer, given back to the OS and faulted in again on every run.
             // The end of a pause in force counts as a due time: a paused consumer's worker
             // wakes by itself when its pause runs out; so does the end of an open breaker's
             // cool-down, when its probe may go.
             "SELECT (SELECT min(t) FROM (SELECT min(d.next_attempt_at) AS t FROM json_each(?1) "
             "j CROSS JOIN sluice_deliveries d INDEXED BY sluice_deliveries_due WHERE "
             "d.consumer_id = j.value AND d.state = 'pending' AND d.next_attempt_at > ?2 "
             "UNION ALL SELECT min(c.paused_until) FROM json_each(?1) j CROSS JOIN "
             "sluice_consumers c WHERE c.id = j.value AND c.paused_at IS NOT NULL AND "
             "c.paused_until > ?2 UNION ALL SELECT min(c.breaker_open_until) FROM json_each(?1) j "
             "CROSS JOIN sluice_consumers c WHERE c.id = j.value AND c.breaker_open_until > ?2)), "
             "EXISTS (SELECT 1 FROM "
             "json_each(?1) j CROSS JOIN sluice_claims c WHERE c.consumer_id = j.value AND "
             "c.owner <> ?3)"),
      owner_(std::move(owner)),
      consumer_ids_(json_id_array(consumer_ids)) {}

IdleCheck::Finding IdleCheck::after(TimePoint looked_at) {
  // Every statement is rewound after its step: one left stepping keeps its read snapshot.
  rewind(query_);
  query_.bindNoCopy(1, consumer_ids_);
  query_.bind(2, static_cast<int64_t>(to_millis(looked_at)));
  query_.bindNoCopy(3, owner_);
  query_.executeStep();
  Finding found;
  if (!query_.getColumn(0).isNull()) {
    found.next_due = TimePoint(Duration(query_.getColumn(0).getInt64()));
  }
  found.others_claim = query_.getColumn(1).getInt() != 0;
  rewind(query_);
  return found;
}

}  // namespace sluice
