#include "file_state.hpp"

#include <SQLiteCpp/Statement.h>

namespace sluice::torture {

std::vector<ConsumerState> consumer_states(SQLite::Database& db) {
  std::vector<ConsumerState> states;
  SQLite::Statement q(db, R"sql(
    SELECT c.name,
      (SELECT count(*) FROM sluice_events e JOIN sluice_subscriptions s
         ON s.consumer_id = c.id AND s.topic = e.topic
       WHERE e.seq > c.cursor AND e.seq > s.start_seq)
      + (SELECT count(*) FROM sluice_deliveries d WHERE d.consumer_id = c.id
         AND d.state = 'pending'),
      (SELECT count(*) FROM sluice_deliveries d WHERE d.consumer_id = c.id
         AND d.state = 'claimed')
      + (SELECT count(*) FROM sluice_claims k WHERE k.consumer_id = c.id),
      (SELECT count(*) FROM sluice_deliveries d WHERE d.consumer_id = c.id AND d.state = 'dead'),
      c.retries_total
    FROM sluice_consumers c ORDER BY c.name)sql");
  while (q.executeStep()) {
    states.push_back({q.getColumn(0).getString(), q.getColumn(1).getInt64(),
                      q.getColumn(2).getInt64(), q.getColumn(3).getInt64(),
                      q.getColumn(4).getInt64()});
  }
  return states;
}

std::vector<DeadLetterRow> dead_letter_rows(SQLite::Database& db) {
  std::vector<DeadLetterRow> rows;
  SQLite::Statement q(db, R"sql(
    SELECT e.id, c.name, coalesce(d.reason, '') FROM sluice_deliveries d
    JOIN sluice_events e ON e.seq = d.event_seq
    JOIN sluice_consumers c ON c.id = d.consumer_id
    WHERE d.state = 'dead' ORDER BY d.event_seq)sql");
  while (q.executeStep()) {
    rows.push_back(
        {q.getColumn(0).getString(), q.getColumn(1).getString(), q.getColumn(2).getString()});
  }
  return rows;
}

long long delivered_without_effect(SQLite::Database& db, const std::string& consumer) {
  SQLite::Statement q(db, R"sql(
    SELECT count(*) FROM sluice_inbox i JOIN sluice_consumers c ON c.id = i.consumer_id
    WHERE c.name = ?1 AND NOT EXISTS (SELECT 1 FROM torture_applied a
                                      WHERE a.consumer = ?1 AND a.event_id = i.event_id))sql");
  q.bind(1, consumer);
  q.executeStep();
  return q.getColumn(0).getInt64();
}

}  // namespace sluice::torture
