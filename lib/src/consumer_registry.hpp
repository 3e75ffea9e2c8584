// Consumers and subscriptions as recorded in the file, so every process sees the same set.
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <cstdint>
#include <optional>
#include <string>

#include "sluice/clock.hpp"
#include "sluice/consumer.hpp"

namespace sluice {

// What the file keeps for a consumer, the same for every instance of it. A field left unset is
// not asked for: an existing consumer keeps what it has, a new one gets the default.
struct RecordedOptions {
  std::optional<DeliveryMode> mode;
  std::optional<bool> ordered;
  std::optional<int> max_attempts;
  std::optional<std::int64_t> retry_span_ms;  // RetryPolicy::longest_span()
  // The rest of RetryPolicy. A consumer recorded before schema version 8 has none of them: the
  // first subscription that asks records what it asks.
  std::optional<Duration> initial_backoff;
  std::optional<Duration> max_backoff;
  std::optional<double> multiplier;
  std::optional<double> jitter;
  std::optional<std::uint64_t> seed;
  // The circuit breaker: unset when not asked; asked as none (an empty inner value) or one.
  std::optional<std::optional<Breaker>> breaker;

  // Every field, from a worker's subscription.
  static RecordedOptions of(const ConsumerOptions& options, const RetryPolicy& retry);
};

// Records `consumer` (created on first use under an id never used before) and its subscription
// to `topic`, in a transaction of its own. Returns the consumer's id. An existing consumer whose
// recorded options differ from those asked throws InvalidArgument naming each difference, and
// nothing is written: one consumer has one set of options. A subscription new to an existing
// consumer with StartFrom::kOldest queues the topic's retained events the consumer's cursor has
// passed, so that it receives every one of them. Throws InvalidArgument when the backoff it would
// record is out of order (max_backoff below initial_backoff, counting recorded and default values
// for those not asked).
std::int64_t record_subscription(SQLite::Database& db, const std::string& consumer,
                                 const std::string& topic, const RecordedOptions& options,
                                 StartFrom start_from, TimePoint now);

// The retry policy recorded for the consumer whose sluice_consumers row `row` reads from its
// column `first` on: max_attempts, initial_backoff_ms, max_backoff_ms, backoff_multiplier,
// backoff_jitter, backoff_seed (the defaults for those not recorded).
RetryPolicy recorded_retry_policy(SQLite::Statement& row, int first);

// The id of `consumer`. Throws NotFound naming it.
std::int64_t consumer_id(SQLite::Database& db, const std::string& consumer);

}  // namespace sluice
