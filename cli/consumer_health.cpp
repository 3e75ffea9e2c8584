#include "consumer_health.hpp"

#include <algorithm>

#include "format.hpp"
#include "pause_text.hpp"

namespace sluice::cli {
namespace {

bool names(const WorkerStatus& worker, const std::string& consumer) {
  return std::find(worker.consumers.begin(), worker.consumers.end(), consumer) !=
         worker.consumers.end();
}

void keep_latest(std::optional<TimePoint>& latest, TimePoint t) {
  if (!latest || t > *latest) latest = t;
}

std::string last_seen_text(const ConsumerHealth& health, TimePoint now) {
  if (!health.last_seen_worker) return "none is registered; a worker that stopped leaves no trace";
  return "a worker of it was last known alive " +
         format_duration(std::max(Duration(0), now - *health.last_seen_worker)) + " ago";
}

}  // namespace

std::vector<ConsumerHealth> consumer_health(const std::vector<ConsumerStats>& stats,
                                            const std::vector<WorkerStatus>& workers,
                                            const std::vector<HeldClaim>& claims,
                                            const HealthLimits& limits, TimePoint now) {
  std::vector<ConsumerHealth> all;
  for (const ConsumerStats& s : stats) {
    ConsumerHealth health{.consumer = s.consumer};
    for (const WorkerStatus& worker : workers) {
      if (!names(worker, s.consumer)) continue;
      if (worker.liveness == Liveness::kAlive) ++health.live_workers;
      if (worker.liveness == Liveness::kUnknown) health.maybe_live_worker = true;
      keep_latest(health.last_seen_worker, worker.started_at);
    }
    for (const HeldClaim& claim : claims) {
      if (claim.consumer != s.consumer) continue;
      keep_latest(health.last_seen_worker, claim.since);
      // A claim made before workers registered (schema version 6) names only its process.
      if (!claim.worker_id && claim.owner_alive) ++health.live_workers;
      const Duration age = now - claim.since;
      if (age > limits.max_claim_age) {
        health.findings.push_back(
            {"claim_age", "consumer " + s.consumer + ": claim " + std::to_string(claim.id) +
                              " of pid " + std::to_string(claim.pid) + " (" +
                              (claim.owner_alive ? "alive" : "dead") + ") has held its batch " +
                              format_duration(age) + ", over --max-claim-age " +
                              format_duration(limits.max_claim_age)});
      }
    }
    if (health.live_workers > 0) health.last_seen_worker = now;
    if (s.paused && now - s.paused_since > limits.max_pause) {
      health.findings.push_back({"paused", "consumer " + s.consumer + ": " + describe_pause(s) +
                                               ", over --max-pause " +
                                               format_duration(limits.max_pause)});
    }
    // An open breaker is the consumer shielding itself from an outage: working as designed,
    // but the operator should know that something it calls is down.
    if (s.breaker == "open" || s.breaker == "half-open") {
      health.findings.push_back(
          {"breaker",
           "consumer " + s.consumer + ": circuit breaker " + s.breaker +
               (s.breaker_open_until ? (*s.breaker_open_until > now ? " until " : " since ") +
                                           format_time(*s.breaker_open_until)
                                     : std::string()) +
               " after " + std::to_string(s.breaker_failures) +
               " transient failure(s) in a row (cool-down " + format_duration(s.breaker_cool_down) +
               ")"});
    }
    // A paused consumer's due work waits for its resume, not for a worker.
    if (s.due > 0 && !s.paused && health.live_workers == 0 && !health.maybe_live_worker) {
      health.findings.push_back({"stuck", "consumer " + s.consumer + ": " + std::to_string(s.due) +
                                              " event(s) due and no live worker (" +
                                              last_seen_text(health, now) + ")"});
    }
    if (s.lag > limits.max_lag) {
      health.findings.push_back({"lag", "consumer " + s.consumer + ": lag " +
                                            format_duration(s.lag) + ", over --max-lag " +
                                            format_duration(limits.max_lag)});
    }
    if (!health.findings.empty()) health.severity = Severity::kWarning;
    all.push_back(std::move(health));
  }
  return all;
}

std::string describe_workers(const ConsumerHealth& health, TimePoint now) {
  if (health.live_workers > 0) {
    return "alive (" + std::to_string(health.live_workers) +
           (health.live_workers == 1 ? " worker)" : " workers)");
  }
  if (health.maybe_live_worker) return "unknown";
  if (!health.last_seen_worker) return "none running";
  return "seen " + format_duration(std::max(Duration(0), now - *health.last_seen_worker)) + " ago";
}

}  // namespace sluice::cli
