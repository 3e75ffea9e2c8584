#include "wake_order.hpp"

#include "json_string.hpp"
#include "rewind.hpp"

namespace sluice {
namespace {

// How many events past a consumer's cursor the statement reads at most: past them it counts the
// consumer as having news rather than read on (a consumer far behind reads no 1M rows per wake).
constexpr int kLookAhead = 512;

}  // namespace

WakeOrder::WakeOrder(SQLite::Database& db, const std::vector<std::int64_t>& consumer_ids)
    : query_(db,
             // ?1 the consumers as a JSON array, ?2 the look-ahead. Events by their primary key
             // from the cursor on, each checked against the consumer's subscriptions by theirs.
             "SELECT c.id FROM json_each(?1) j CROSS JOIN sluice_consumers c ON c.id = j.value "
             "WHERE (SELECT coalesce(max(seq), 0) FROM sluice_events) > c.cursor + ?2 OR EXISTS "
             "(SELECT 1 FROM sluice_events e CROSS JOIN sluice_subscriptions s WHERE e.seq > "
             "c.cursor AND e.seq <= c.cursor + ?2 AND s.consumer_id = c.id AND s.topic = e.topic "
             "AND e.seq > s.start_seq) ORDER BY j.key"),
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

}  // namespace sluice
