// Consumers and subscriptions as recorded in the file, so every process sees the same set.
#pragma once

#include <SQLiteCpp/Database.h>

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

  // Every field, from a worker's subscription.
  static RecordedOptions of(const ConsumerOptions& options, const RetryPolicy& retry);
};

// Records `consumer` (created on first use under an id never used before) and its subscription
// to `topic`, in a transaction of its own. Returns the consumer's id. An existing consumer whose
// recorded options differ from those asked throws InvalidArgument naming each difference, and
// nothing is written: one consumer has one set of options. A subscription new to an existing
// consumer with StartFrom::kOldest queues the topic's retained events the consumer's cursor has
// passed, so that it receives every one of them.
std::int64_t record_subscription(SQLite::Database& db, const std::string& consumer,
                                 const std::string& topic, const RecordedOptions& options,
                                 StartFrom start_from, TimePoint now);

// The id of `consumer`. Throws NotFound naming it.
std::int64_t consumer_id(SQLite::Database& db, const std::string& consumer);

}  // namespace sluice
