#include "consumer_registry.hpp"

#include <SQLiteCpp/Statement.h>

#include <nlohmann/json.hpp>
#include <utility>

#include "control_characters.hpp"
#include "sluice/error.hpp"
#include "write_transaction.hpp"

namespace sluice {
namespace {

const char* mode_name(DeliveryMode mode) {
  return mode == DeliveryMode::kInTransaction ? "in-transaction" : "outside-transaction";
}

// The columns every read of a consumer's options takes, in this order (kFirstRetryColumn on:
// recorded_retry_policy's).
const char* const kOptionColumns =
    "id, mode, ordered, cursor, retry_span_ms, max_attempts, initial_backoff_ms, max_backoff_ms, "
    "backoff_multiplier, backoff_jitter, backoff_seed, breaker_failures, breaker_cool_down_ms, "
    "breaker_max_cool_down_ms";
constexpr int kFirstRetryColumn = 5;

std::string number(double value) { return nlohmann::json(value).dump(); }

// "mode in-transaction (asked outside-transaction), ordered true (asked false)", or "" when
// the recorded row agrees with every field asked. A field the row does not record (a consumer
// recorded before schema version 8) differs from nothing.
std::string differences(SQLite::Statement& row, const RecordedOptions& asked) {
  std::string found;
  const auto add = [&found](const std::string& field, const std::string& recorded,
                            const std::string& wanted) {
    if (recorded == wanted) return;
    if (!found.empty()) found += ", ";
    found += field + " " + recorded + " (asked " + wanted + ")";
  };
  const auto flag = [](bool value) { return std::string(value ? "true" : "false"); };
  const auto recorded = [&row](int column) { return !row.getColumn(column).isNull(); };
  if (asked.mode) add("mode", row.getColumn(1).getString(), mode_name(*asked.mode));
  if (asked.ordered) add("ordered", flag(row.getColumn(2).getInt() != 0), flag(*asked.ordered));
  if (asked.retry_span_ms) {
    add("retry span (ms)", std::to_string(row.getColumn(4).getInt64()),
        std::to_string(*asked.retry_span_ms));
  }
  if (asked.max_attempts) {
    add("max_attempts", std::to_string(row.getColumn(5).getInt()),
        std::to_string(*asked.max_attempts));
  }
  if (asked.initial_backoff && recorded(6)) {
    add("initial_backoff_ms", std::to_string(row.getColumn(6).getInt64()),
        std::to_string(asked.initial_backoff->count()));
  }
  if (asked.max_backoff && recorded(7)) {
    add("max_backoff_ms", std::to_string(row.getColumn(7).getInt64()),
        std::to_string(asked.max_backoff->count()));
  }
  if (asked.multiplier && recorded(8)) {
    add("multiplier", number(row.getColumn(8).getDouble()), number(*asked.multiplier));
  }
  if (asked.jitter && recorded(9)) {
    add("jitter", number(row.getColumn(9).getDouble()), number(*asked.jitter));
  }
  if (asked.seed && recorded(10)) {
    add("seed", std::to_string(static_cast<std::uint64_t>(row.getColumn(10).getInt64())),
        std::to_string(*asked.seed));
  }
  if (asked.breaker) {
    const auto text = [](const std::optional<Breaker>& b) {
      return b ? "{failures " + std::to_string(b->failures) + ", cool_down_ms " +
                     std::to_string(b->cool_down.count()) + ", max_cool_down_ms " +
                     std::to_string(b->max_cool_down.count()) + "}"
               : std::string("none");
    };
    std::optional<Breaker> has;
    if (recorded(11)) {
      has = Breaker{row.getColumn(11).getInt(), Duration(row.getColumn(12).getInt64()),
                    Duration(row.getColumn(13).getInt64())};
    }
    add("breaker", text(has), text(*asked.breaker));
  }
  return found;
}

// The policy the consumer retries by once `asked` is recorded: what it asks, else what `row`
// records (when there is a row), else the default. Throws InvalidArgument when its backoff
// bounds are out of order.
RetryPolicy effective_policy(SQLite::Statement* row, const RecordedOptions& asked) {
  RetryPolicy policy =
      row != nullptr ? recorded_retry_policy(*row, kFirstRetryColumn) : RetryPolicy{};
  if (asked.max_attempts) policy.max_attempts = *asked.max_attempts;
  if (asked.initial_backoff) policy.initial_backoff = *asked.initial_backoff;
  if (asked.max_backoff) policy.max_backoff = *asked.max_backoff;
  if (asked.multiplier) policy.multiplier = *asked.multiplier;
  if (asked.jitter) policy.jitter = *asked.jitter;
  if (asked.seed) policy.seed = *asked.seed;
  if (policy.max_backoff < policy.initial_backoff) {
    throw InvalidArgument(
        "sluice: subscribe: max_backoff_ms " + std::to_string(policy.max_backoff.count()) +
        (asked.max_backoff ? "" : " (recorded or the default)") +
        " is less than initial_backoff_ms " + std::to_string(policy.initial_backoff.count()) +
        (asked.initial_backoff ? "" : " (recorded or the default)"));
  }
  return policy;
}

void bind_optional(SQLite::Statement& s, int index, const std::optional<std::int64_t>& value) {
  if (value) {
    s.bind(index, static_cast<int64_t>(*value));
  } else {
    s.bind(index);
  }
}

void bind_optional(SQLite::Statement& s, int index, const std::optional<double>& value) {
  if (value) {
    s.bind(index, *value);
  } else {
    s.bind(index);
  }
}

std::optional<std::int64_t> millis(const std::optional<Duration>& d) {
  return d ? std::optional<std::int64_t>(d->count()) : std::nullopt;
}

// The seed's 64 bits as SQLite's signed integer (recorded_retry_policy casts them back).
std::optional<std::int64_t> seed_bits(const std::optional<std::uint64_t>& seed) {
  return seed ? std::optional<std::int64_t>(static_cast<std::int64_t>(*seed)) : std::nullopt;
}

}  // namespace

RecordedOptions RecordedOptions::of(const ConsumerOptions& options, const RetryPolicy& retry) {
  return {.mode = options.mode,
          .ordered = options.ordered,
          .max_attempts = retry.max_attempts,
          .retry_span_ms = static_cast<std::int64_t>(retry.longest_span().count()),
          .initial_backoff = retry.initial_backoff,
          .max_backoff = retry.max_backoff,
          .multiplier = retry.multiplier,
          .jitter = retry.jitter,
          .seed = retry.seed,
          .breaker = options.breaker};
}

RetryPolicy recorded_retry_policy(SQLite::Statement& row, int first) {
  RetryPolicy policy;
  policy.max_attempts = row.getColumn(first).getInt();
  if (!row.getColumn(first + 1).isNull()) {
    policy.initial_backoff = Duration(row.getColumn(first + 1).getInt64());
  }
  if (!row.getColumn(first + 2).isNull()) {
    policy.max_backoff = Duration(row.getColumn(first + 2).getInt64());
  }
  if (!row.getColumn(first + 3).isNull()) policy.multiplier = row.getColumn(first + 3).getDouble();
  if (!row.getColumn(first + 4).isNull()) policy.jitter = row.getColumn(first + 4).getDouble();
  if (!row.getColumn(first + 5).isNull()) {
    policy.seed = static_cast<std::uint64_t>(row.getColumn(first + 5).getInt64());
  }
  return policy;
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
  SQLite::Statement existing(
      db, std::string("SELECT ") + kOptionColumns + " FROM sluice_consumers WHERE name = ?");
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
    effective_policy(&existing, options);
    id = existing.getColumn(0).getInt64();
    cursor = existing.getColumn(3).getInt64();
    // A consumer recorded before schema version 8 learns its backoff from the first
    // subscription that gives it.
    SQLite::Statement fill(
        db,
        "UPDATE sluice_consumers SET initial_backoff_ms = coalesce(initial_backoff_ms, ?2), "
        "max_backoff_ms = coalesce(max_backoff_ms, ?3), backoff_multiplier = "
        "coalesce(backoff_multiplier, ?4), backoff_jitter = coalesce(backoff_jitter, ?5), "
        "backoff_seed = coalesce(backoff_seed, ?6) WHERE id = ?1 AND (initial_backoff_ms IS NULL "
        "OR max_backoff_ms IS NULL OR backoff_multiplier IS NULL OR backoff_jitter IS NULL OR "
        "backoff_seed IS NULL)");
    fill.bind(1, static_cast<int64_t>(id));
    bind_optional(fill, 2, millis(options.initial_backoff));
    bind_optional(fill, 3, millis(options.max_backoff));
    bind_optional(fill, 4, options.multiplier);
    bind_optional(fill, 5, options.jitter);
    bind_optional(fill, 6, seed_bits(options.seed));
    existing.reset();
    fill.exec();
  } else {
    const RetryPolicy policy = effective_policy(nullptr, options);
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
    SQLite::Statement insert(
        db,
        "INSERT INTO sluice_consumers (id, name, cursor, mode, ordered, max_attempts, "
        "retry_span_ms, created_at, initial_backoff_ms, max_backoff_ms, backoff_multiplier, "
        "backoff_jitter, backoff_seed, breaker_failures, breaker_cool_down_ms, "
        "breaker_max_cool_down_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
        "?14, ?15, ?16)");
    insert.bind(1, static_cast<int64_t>(id));
    insert.bind(2, consumer);
    insert.bind(3, static_cast<int64_t>(start));
    insert.bind(4, mode_name(options.mode.value_or(DeliveryMode::kInTransaction)));
    insert.bind(5, options.ordered.value_or(false) ? 1 : 0);
    insert.bind(6, policy.max_attempts);
    insert.bind(
        7, static_cast<int64_t>(options.retry_span_ms.value_or(policy.longest_span().count())));
    insert.bind(8, static_cast<int64_t>(now.time_since_epoch().count()));
    insert.bind(9, static_cast<int64_t>(policy.initial_backoff.count()));
    insert.bind(10, static_cast<int64_t>(policy.max_backoff.count()));
    insert.bind(11, policy.multiplier);
    insert.bind(12, policy.jitter);
    insert.bind(13, static_cast<int64_t>(policy.seed));
    if (options.breaker && *options.breaker) {
      const Breaker& breaker = **options.breaker;
      insert.bind(14, breaker.failures);
      insert.bind(15, static_cast<int64_t>(breaker.cool_down.count()));
      insert.bind(16, static_cast<int64_t>(breaker.max_cool_down.count()));
    } else {
      insert.bind(14);
      insert.bind(15);
      insert.bind(16);
    }
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
