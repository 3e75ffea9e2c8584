#include "consumer_registry.hpp"

#include <SQLiteCpp/Statement.h>

#include <utility>

#include "control_characters.hpp"
#include "sluice/error.hpp"
#include "write_transaction.hpp"

namespace sluice {
namespace {

const char* mode_name(DeliveryMode mode) {
  return mode == DeliveryMode::kInTransaction ? "in-transaction" : "outside-transaction";
}

// "mode in-transaction (asked outside-transaction), ordered true (asked false)", or "" when
// the recorded row agrees with every field asked.
std::string differences(SQLite::Statement& row, const RecordedOptions& asked) {
  std::string found;
  const auto add = [&found](const std::string& field, const std::string& recorded,
                            const std::string& wanted) {
    if (recorded == wanted) return;
    if (!found.empty()) found += ", ";
    found += field + " " + recorded + " (asked " + wanted + ")";
  };
  const auto flag = [](bool value) { return std::string(value ? "true" : "false"); };
  if (asked.mode) add("mode", row.getColumn(1).getString(), mode_name(*asked.mode));
  if (asked.ordered) add("ordered", flag(row.getColumn(2).getInt() != 0), flag(*asked.ordered));
  if (asked.max_attempts) {
    add("max_attempts", std::to_string(row.getColumn(3).getInt()),
        std::to_string(*asked.max_attempts));
  }
  if (asked.retry_span_ms) {
    add("retry span (ms)", std::to_string(row.getColumn(4).getInt64()),
        std::to_string(*asked.retry_span_ms));
  }
  return found;
}

}  // namespace

RecordedOptions RecordedOptions::of(const ConsumerOptions& options, const RetryPolicy& retry) {
  return {.mode = options.mode,
          .ordered = options.ordered,
          .max_attempts = retry.max_attempts,
          .retry_span_ms = static_cast<std::int64_t>(retry.longest_span().count())};
}

std::int64_t record_subscription(SQLite::Database& db, const std::string& consumer,
                                 const std::string& topic, const RecordedOptions& options,
                                 StartFrom start_from, TimePoint now) {
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
  const std::int64_t start = start_from == StartFrom::kNow ? newest.getColumn(0).getInt64() : 0;
  SQLite::Statement existing(db,
                             "SELECT id, mode, ordered, max_attempts, retry_span_ms, cursor FROM "
                             "sluice_consumers WHERE name = ?");
  existing.bind(1, consumer);
  std::int64_t id = 0;
  std::int64_t cursor = 0;
  const bool exists = existing.executeStep();
  if (exists) {
    const std::string differ = differences(existing, options);
    if (!differ.empty()) {
      throw InvalidArgument("sluice: subscribe: consumer '" + consumer +
                            "' is recorded in the file with other options: " + differ +
                            ". One consumer has one set of options, whichever process or "
                            "language subscribes it: subscribe with the recorded ones, or use "
                            "another consumer name");
    }
    id = existing.getColumn(0).getInt64();
    cursor = existing.getColumn(5).getInt64();
  } else {
    // A new id from the counter, never one a removed consumer had: its old workers would take
    // the new consumer's events for their own (claim_book.hpp).
    SQLite::Statement next_id(db,
                              "UPDATE sluice_meta SET value = max(value, (SELECT coalesce(max(id), "
                              "0) FROM sluice_consumers)) + 1 WHERE name = 'consumer_ids' "
                              "RETURNING value");
    if (!next_id.executeStep()) {
      throw DatabaseError("sluice: the file has no consumer id counter (schema version 6)", 0);
    }
    id = next_id.getColumn(0).getInt64();
    next_id.reset();
    RetryPolicy defaults;
    if (options.max_attempts) defaults.max_attempts = *options.max_attempts;
    SQLite::Statement insert(
        db,
        "INSERT INTO sluice_consumers (id, name, cursor, mode, ordered, max_attempts, "
        "retry_span_ms, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    insert.bind(1, static_cast<int64_t>(id));
    insert.bind(2, consumer);
    insert.bind(3, static_cast<int64_t>(start));
    insert.bind(4, mode_name(options.mode.value_or(DeliveryMode::kInTransaction)));
    insert.bind(5, options.ordered.value_or(false) ? 1 : 0);
    insert.bind(6, options.max_attempts.value_or(defaults.max_attempts));
    insert.bind(
        7, static_cast<int64_t>(options.retry_span_ms.value_or(defaults.longest_span().count())));
    insert.bind(8, static_cast<int64_t>(now.time_since_epoch().count()));
    insert.exec();
    cursor = start;
  }
  existing.reset();
  SQLite::Statement subscribe(db,
                              "INSERT INTO sluice_subscriptions (consumer_id, topic, start_seq) "
                              "VALUES (?, ?, ?) ON CONFLICT DO NOTHING");
  subscribe.bind(1, static_cast<int64_t>(id));
  subscribe.bind(2, topic);
  subscribe.bind(3, static_cast<int64_t>(start));
  const bool added = subscribe.exec() > 0;
  if (added && start_from == StartFrom::kOldest && cursor > 0) {
    // The cursor has passed the topic's retained events before this subscription existed: they
    // are queued as pending rows, which keeps the cursor's promise (schema.cpp) for them too.
    SQLite::Statement queue(
        db,
        "INSERT INTO sluice_deliveries (consumer_id, event_seq, state, key, attempts, "
        "next_attempt_at, scheduled_at) SELECT ?1, e.seq, 'pending', e.key, 0, "
        "coalesce(e.not_before, 0), 0 FROM sluice_events e WHERE e.topic = ?2 AND e.seq <= ?3 "
        "AND NOT EXISTS (SELECT 1 FROM sluice_inbox i WHERE i.consumer_id = ?1 AND "
        "i.event_id = e.id) ON CONFLICT DO NOTHING");
    queue.bind(1, static_cast<int64_t>(id));
    queue.bind(2, topic);
    queue.bind(3, static_cast<int64_t>(cursor));
    queue.exec();
  }
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
