// Consumers and subscriptions as recorded in the file, so every process sees the same set.
#pragma once

#include <SQLiteCpp/Database.h>

#include <cstdint>
#include <string>

#include "sluice/clock.hpp"
#include "sluice/consumer.hpp"

namespace sluice {

// Records `consumer` (created on first use, its settings updated otherwise) and its subscription
// to `topic`, in a transaction of its own. Returns the consumer's id.
std::int64_t record_subscription(SQLite::Database& db, const std::string& consumer,
                                 const std::string& topic, const ConsumerOptions& options,
                                 const RetryPolicy& retry, TimePoint now);

// The id of `consumer`. Throws NotFound naming it.
std::int64_t consumer_id(SQLite::Database& db, const std::string& consumer);

}  // namespace sluice
