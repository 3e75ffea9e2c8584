#include "wake_order.hpp"

#include "json_string.hpp"
#include "rewind.hpp"
#include "write_transaction.hpp"

namespace sluice {
namespace {

// How many events past a consumer's cursor the statement reads at most: past them it counts the
// consumer as having news rather than read on (a consumer far behind reads no 1M rows per wake).
constexpr int kLookAhead = 512;

}  // namespace

WakeOrder::WakeOrder(SQLite::Database& db, const std::vector<std::int64_t>& consumer_ids)
    : db_(db),
      query_(db,
             // ?1 the consumers as a JSON array, ?2 the look-ahead. Events by their primary key
             // from the cursor on, each checked against the consumer's subscriptions by theirs.
             "SELECT c.id FROM json_each(?1) j CROSS JOIN sluice_consumers c ON c.id = j.value "
             "WHERE (SELECT coalesce(max(seq), 0) FROM sluice_events) > c.cursor + ?2 OR EXISTS "
             "(SELECT 1 FROM sluice_events e CROSS JOIN sluice_subscriptions s WHERE e.seq > "
             "c.cursor AND e.seq <= c.cursor + ?2 AND s.consumer_id = c.id AND s.topic = e.topic "
             "AND e.seq > s.start_seq) ORDER BY j.key"),
      // ?1 consumers as a JSON array.
      any_behind_(db,
                  "SELECT 1 FROM json_each(?1) j CROSS JOIN sluice_consumers c ON c.id = j.value "
                  "WHERE c.cursor < (SELECT coalesce(max(seq), 0) FROM sluice_events) LIMIT 1"),
      // As the claim's own scan (Deliverer::claim_fresh) moves a cursor past events of other
      // topics, but for many consumers at once; in the write transaction, so no event of theirs
      // can commit between the look and the move.
      skip_(db,
            "UPDATE sluice_consumers AS c SET cursor = (SELECT coalesce(max(seq), 0) FROM "
            "sluice_events) WHERE c.id IN (SELECT value FROM json_each(?1)) AND c.cursor < "
            "(SELECT coalesce(max(seq), 0) FROM sluice_events) AND NOT EXISTS (SELECT 1 FROM "
            "sluice_events e CROSS JOIN sluice_subscriptions s WHERE e.seq > c.cursor AND "
            "s.consumer_id = c.id AND s.topic = e.topic AND e.seq > s.start_seq)"),
      consumer_ids_(json_id_array(consumer_ids)) {}

std::vector<std::int64_t> WakeOrder::first() {
  // Every statement is rewound after its step: one left stepping keeps its read snapshot.
  rewind(query_);
  query_.bindNoCopy(1, consumer_ids_);
  query_.bind(2, kLookAhead);
  std::vector<std::int64_t> ids;
  while (query_.executeStep()) ids.push_back(query_.getColumn(0).getInt64());
  rewind(query_);
  return ids;
}

void WakeOrder::skip_past_others(const std::vector<std::int64_t>& ids) {
  const std::string others = json_id_array(ids);
  rewind(any_behind_);
  any_behind_.bindNoCopy(1, others);
  const bool behind = any_behind_.executeStep();
  rewind(any_behind_);
  if (!behind) return;
  WriteTransaction tx(db_);
  rewind(skip_);
  skip_.bindNoCopy(1, others);
  skip_.exec();
  rewind(skip_);
  tx.commit();
}

}  // namespace sluice
