// The rules that call a consumer stuck or slow. `sluice check` and the console's consumer rows
// both take their verdict from here, so that they never disagree about a consumer.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "severity.hpp"
#include "sluice/stats.hpp"
#include "sluice/workers.hpp"

namespace sluice::cli {

// Where the rules draw the line (`check --max-lag`, `--max-claim-age`).
struct HealthLimits {
  // The oldest due event may wait this long: over it, the consumer falls behind.
  Duration max_lag = std::chrono::minutes(5);
  // A worker may hold one batch this long: over it, a handler hangs or works too slowly.
  Duration max_claim_age = std::chrono::minutes(10);
  // A consumer may stay paused this long (by anyone): over it, someone forgot to resume it.
  Duration max_pause = std::chrono::hours(1);
};

// One rule broken: `check` names the check it belongs to ("stuck", "lag", "claim_age",
// "paused", "breaker").
struct HealthFinding {
  std::string check;
  std::string detail;
};

struct ConsumerHealth {
  std::string consumer;
  Severity severity = Severity::kOk;
  std::vector<HealthFinding> findings;
  // Registered workers for it known to be alive, and whether one might be (liveness unknown).
  int live_workers = 0;
  bool maybe_live_worker = false;
  // When a worker of it was last known to run: now while one lives; else the latest a dead or
  // unknown worker registered or took a batch. None when no trace of one is left (a worker that
  // stopped cleanly leaves none).
  std::optional<TimePoint> last_seen_worker;
};

// Per consumer of `stats` (in its order), the verdict at `now`: a warning for due work with no
// live worker (unless paused), for a lag over limits.max_lag, for a claim held longer than
// limits.max_claim_age, for a pause in force longer than limits.max_pause, and for a circuit
// breaker open or half-open. Reads nothing: the caller reads stats, workers and claims.
std::vector<ConsumerHealth> consumer_health(const std::vector<ConsumerStats>& stats,
                                            const std::vector<WorkerStatus>& workers,
                                            const std::vector<HeldClaim>& claims,
                                            const HealthLimits& limits, TimePoint now);

// "alive (2 workers)", "seen 2h ago", "unknown" or "none running", for tables.
std::string describe_workers(const ConsumerHealth& health, TimePoint now);

}  // namespace sluice::cli
