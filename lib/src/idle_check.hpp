// What an idle worker asks its file once its look at its consumers found nothing to do. A look (a
// round of Deliverer::step) costs about ten statements per consumer, and an idle worker used to
// look again every 10 poll intervals for what no commit announces. This is one statement for all
// of its consumers, and its answer holds until the next commit (which ends the worker's sleep
// anyway): while nothing commits, the worker compares the clock with it and reads PRAGMA
// data_version, so that with nothing due a started worker with 100 consumers costs what one with
// a single consumer does.
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sluice/clock.hpp"

namespace sluice {

// Not thread-safe: bound to the worker's connection, used by the worker's thread.
class IdleCheck {
 public:
  // Checks the deliveries and claims of the consumers `consumer_ids` (the worker's) for a
  // worker whose claims carry `owner`.
  IdleCheck(SQLite::Database& db, std::string owner, const std::vector<std::int64_t>& consumer_ids);

  struct Finding {
    // When the earliest pending delivery due after `looked_at` falls due, if any. A pending row
    // due by `looked_at` was seen by the look and is no news: one held back by its key or of a
    // topic with no handler here stays so until a commit changes that. The end of a pause of
    // one of the consumers counts too.
    std::optional<TimePoint> next_due;
    // Whether another worker holds a claim of these consumers: it may die or its lease run out,
    // which no commit announces (Deliverer::step tells whether a claim is abandoned).
    bool others_claim = false;
  };

  // What the worker waits for after a look at its consumers that began at `looked_at` found
  // nothing to do.
  Finding after(TimePoint looked_at);

 private:
  SQLite::Statement query_;
  const std::string owner_;
  const std::string consumer_ids_;  // a JSON array
};

}  // namespace sluice
