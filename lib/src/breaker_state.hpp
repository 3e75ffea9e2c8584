// A consumer's circuit breaker (consumer.hpp, Breaker) as its row in the file holds it, and how
// the outcomes of one delivery transaction move it.
#pragma once

#include <SQLiteCpp/Database.h>

#include <cstdint>
#include <optional>
#include <string>

#include "sluice/consumer.hpp"
#include "sluice/options.hpp"

namespace sluice {

struct BreakerState {
  long long consecutive = 0;  // transient failures since the last success
  // Set while open or half-open: until when no event goes through (a probe may once it passed).
  std::optional<TimePoint> open_until;
  Duration open_for{0};  // the cool-down in force, 0 when closed
  bool probe = false;    // a probe is claimed and its outcome not yet committed

  // "closed", "open" (open_until ahead, no probe out) or "half-open" (a probe may go or is out).
  const char* name(TimePoint now) const;
};

// The state of consumer `id`, read in the caller's transaction.
BreakerState read_breaker_state(SQLite::Database& db, std::int64_t id);

// What one delivery transaction saw of a consumer with a breaker, in outcome order.
struct BreakerTally {
  bool success = false;                // some call succeeded
  long long trailing_failures = 0;     // transient failures after the last success (or all)
  bool probe = false;                  // the transaction handled the half-open probe
  std::optional<BreakerState> before;  // the row as the transaction found it, read once

  bool empty() const { return !success && trailing_failures == 0; }
  // Whether the outcomes so far open the breaker (or open it again, for a failed probe).
  bool opens(const Breaker& breaker) const;
};

// Writes what `tally` makes of the breaker of consumer `id` (named `name`) at `now`, one log
// line per transition. Call in the transaction that commits the tally's outcomes, after
// tally.before was read in it.
void write_breaker_state(SQLite::Database& db, std::int64_t id, const std::string& name,
                         const Breaker& breaker, const BreakerTally& tally, TimePoint now,
                         const Options& options);

// Marks the half-open probe as claimed in the claim's transaction: the others hold off for
// another cool-down, in case its worker dies before its outcome commits.
void claim_breaker_probe(SQLite::Database& db, std::int64_t id, const std::string& name,
                         TimePoint now, const Options& options);

}  // namespace sluice
