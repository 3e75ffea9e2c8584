// What the torture checks read straight from a sluice file's tables, independent of the
// library's own reporting: each consumer's unfinished work, open claims and dead letters.
#pragma once

#include <SQLiteCpp/Database.h>

#include <string>
#include <vector>

namespace sluice::torture {

struct ConsumerState {
  std::string consumer;
  // Events not yet handled: past the cursor, or waiting in a pending delivery.
  long long pending = 0;
  // Deliveries in state "claimed" plus claim records.
  long long claimed = 0;
  long long dead = 0;
  long long retries_total = 0;
};

std::vector<ConsumerState> consumer_states(SQLite::Database& db);

struct DeadLetterRow {
  std::string event_id;
  std::string consumer;
  std::string reason;
};

std::vector<DeadLetterRow> dead_letter_rows(SQLite::Database& db);

// In-transaction deliveries of `consumer` recorded in its inbox with no domain row: an event
// marked delivered without its effect.
long long delivered_without_effect(SQLite::Database& db, const std::string& consumer);

}  // namespace sluice::torture
