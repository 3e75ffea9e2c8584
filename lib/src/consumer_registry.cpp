#include "consumer_registry.hpp"

#include <SQLiteCpp/Statement.h>

#include <utility>

#include "control_characters.hpp"
#include "sluice/error.hpp"
#include "write_transaction.hpp"

namespace sluice {

std::int64_t record_subscription(SQLite::Database& db, const std::string& consumer,
                                 const std::string& topic, const ConsumerOptions& options,
                                 const RetryPolicy& retry, TimePoint now) {
  // Names an operator reads in `sluice stats` and the console: no terminal controls in them.
  for (const auto& [text, what] :
       {std::pair{&consumer, "the consumer name"}, {&topic, "the topic"}}) {
    if (has_control_character(*text)) {
      throw InvalidArgument(std::string("sluice: subscribe: ") + what +
                            " contains a control character");
    }
  }
  WriteTransaction tx(db);
  SQLite::Statement newest(db, "SELECT coalesce(max(seq), 0) FROM sluice_events");
  newest.executeStep();
  const std::int64_t start =
      options.start_from == StartFrom::kNow ? newest.getColumn(0).getInt64() : 0;
  SQLite::Statement upsert(
      db,
      "INSERT INTO sluice_consumers (name, cursor, mode, ordered, max_attempts, retry_span_ms, "
      "created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (name) DO UPDATE SET "
      "mode = excluded.mode, ordered = excluded.ordered, max_attempts = excluded.max_attempts, "
      "retry_span_ms = excluded.retry_span_ms");
  upsert.bind(1, consumer);
  upsert.bind(2, static_cast<int64_t>(start));
  upsert.bind(
      3, options.mode == DeliveryMode::kInTransaction ? "in-transaction" : "outside-transaction");
  upsert.bind(4, options.ordered ? 1 : 0);
  upsert.bind(5, retry.max_attempts);
  upsert.bind(6, static_cast<int64_t>(retry.longest_span().count()));
  upsert.bind(7, static_cast<int64_t>(now.time_since_epoch().count()));
  upsert.exec();
  const std::int64_t id = consumer_id(db, consumer);
  SQLite::Statement subscribe(db,
                              "INSERT INTO sluice_subscriptions (consumer_id, topic, start_seq) "
                              "VALUES (?, ?, ?) ON CONFLICT DO NOTHING");
  subscribe.bind(1, static_cast<int64_t>(id));
  subscribe.bind(2, topic);
  subscribe.bind(3, static_cast<int64_t>(start));
  subscribe.exec();
  tx.commit();
  return id;
}

std::int64_t consumer_id(SQLite::Database& db, const std::string& consumer) {
  SQLite::Statement query(db, "SELECT id FROM sluice_consumers WHERE name = ?");
  query.bind(1, consumer);
  if (!query.executeStep()) throw NotFound("sluice: no consumer named '" + consumer + "'");
  return query.getColumn(0).getInt64();
}

}  // namespace sluice
