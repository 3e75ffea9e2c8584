// Which consumers a woken worker steps first. A round steps every consumer, and a consumer's step
// may take the write lock even when none of the new events is of its topics (its cursor moves
// past them), so with 100 consumers of distinct topics the one an event is for waited behind up
// to 99 such steps, milliseconds in all. One statement names the consumers with a new event of
// their topics, and the worker steps those first, the others after: every consumer is still
// stepped once per round.
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sluice {

// Not thread-safe: bound to the worker's connection, used by the worker's thread.
class WakeOrder {
 public:
  // Orders the consumers `consumer_ids` (the worker's).
  WakeOrder(SQLite::Database& db, const std::vector<std::int64_t>& consumer_ids);

  // The consumers with an event of one of their topics past their cursor, or so far behind the
  // newest event that looking for one would cost more than stepping them (those are likely to
  // have work too), in the order given to the constructor.
  std::vector<std::int64_t> first();

 private:
  SQLite::Statement query_;
  const std::string consumer_ids_;  // a JSON array
};

}  // namespace sluice
