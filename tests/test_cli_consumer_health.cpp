#include <doctest/doctest.h>

#include "consumer_health.hpp"

using namespace sluice;
using namespace sluice::cli;
using std::chrono::hours;
using std::chrono::minutes;

namespace {

const TimePoint kNow = TimePoint(Duration(1'800'000'000'000));

ConsumerStats stuck_stats() {
  ConsumerStats stats;
  stats.consumer = "email";
  stats.pending = 3;
  stats.due = 3;
  stats.lag = hours(2);
  return stats;
}

WorkerStatus worker_of(const std::string& consumer, Liveness liveness, TimePoint started_at) {
  WorkerStatus worker;
  worker.id = 7;
  worker.pid = 4242;
  worker.kind = "worker";
  worker.consumers = {consumer};
  worker.started_at = started_at;
  worker.liveness = liveness;
  return worker;
}

std::vector<std::string> checks_of(const ConsumerHealth& health) {
  std::vector<std::string> checks;
  for (const HealthFinding& finding : health.findings) checks.push_back(finding.check);
  return checks;
}

}  // namespace

TEST_CASE("due work with no worker at all, lag 2h: stuck and lagging, a warning") {
  const auto all = consumer_health({stuck_stats()}, {}, {}, {}, kNow);
  REQUIRE(all.size() == 1);
  CHECK(all[0].severity == Severity::kWarning);
  CHECK(checks_of(all[0]) == std::vector<std::string>{"stuck", "lag"});
  CHECK(all[0].findings[0].detail.find("3 event(s) due and no live worker") != std::string::npos);
  CHECK(all[0].findings[1].detail == "consumer email: lag 2h, over --max-lag 5m");
  CHECK_FALSE(all[0].last_seen_worker.has_value());
  CHECK(describe_workers(all[0], kNow) == "none running");
}

TEST_CASE("a live worker of the consumer: not stuck, seen now; the lag rule still applies") {
  const auto all = consumer_health(
      {stuck_stats()}, {worker_of("email", Liveness::kAlive, kNow - hours(5))}, {}, {}, kNow);
  CHECK(checks_of(all[0]) == std::vector<std::string>{"lag"});
  CHECK(all[0].live_workers == 1);
  CHECK(all[0].last_seen_worker == kNow);
  CHECK(describe_workers(all[0], kNow) == "alive (1 worker)");
}

TEST_CASE("a live worker of another consumer does not count") {
  const auto all = consumer_health({stuck_stats()}, {worker_of("billing", Liveness::kAlive, kNow)},
                                   {}, {}, kNow);
  CHECK(checks_of(all[0]) == std::vector<std::string>{"stuck", "lag"});
}

TEST_CASE("a dead worker: stuck, and when it was last seen") {
  const auto all = consumer_health(
      {stuck_stats()}, {worker_of("email", Liveness::kDead, kNow - hours(2))}, {}, {}, kNow);
  CHECK(checks_of(all[0]) == std::vector<std::string>{"stuck", "lag"});
  CHECK(all[0].findings[0].detail.find("last known alive 2h ago") != std::string::npos);
  CHECK(describe_workers(all[0], kNow) == "seen 2h ago");
}

TEST_CASE("a worker whose liveness is unknown is not called missing") {
  const auto all = consumer_health({stuck_stats()}, {worker_of("email", Liveness::kUnknown, kNow)},
                                   {}, {}, kNow);
  CHECK(checks_of(all[0]) == std::vector<std::string>{"lag"});
  CHECK(describe_workers(all[0], kNow) == "unknown");
}

TEST_CASE("pending work that is not due (a retry in an hour) needs no worker yet") {
  ConsumerStats stats = stuck_stats();
  stats.due = 0;
  stats.lag = Duration(0);
  const auto all = consumer_health({stats}, {}, {}, {}, kNow);
  CHECK(all[0].severity == Severity::kOk);
  CHECK(all[0].findings.empty());
}

TEST_CASE("limits are the caller's: a lag under --max-lag is fine") {
  const auto all = consumer_health({stuck_stats()}, {worker_of("email", Liveness::kAlive, kNow)},
                                   {}, HealthLimits{.max_lag = hours(3)}, kNow);
  CHECK(all[0].severity == Severity::kOk);
}

TEST_CASE("a claim holding its batch past --max-claim-age is a finding, naming its process") {
  ConsumerStats stats;
  stats.consumer = "email";
  HeldClaim claim{.id = 12,
                  .consumer = "email",
                  .worker_id = 7,
                  .pid = 4242,
                  .since = kNow - minutes(25),
                  .lease_until = kNow + minutes(1),
                  .owner_alive = true};
  const auto all = consumer_health({stats}, {worker_of("email", Liveness::kAlive, kNow - hours(1))},
                                   {claim}, {}, kNow);
  CHECK(checks_of(all[0]) == std::vector<std::string>{"claim_age"});
  CHECK(all[0].findings[0].detail ==
        "consumer email: claim 12 of pid 4242 (alive) has held its batch 25m, over "
        "--max-claim-age 10m");
  claim.since = kNow - minutes(9);
  CHECK(consumer_health({stats}, {}, {claim}, {}, kNow)[0].findings.empty());
}

TEST_CASE("an open or half-open circuit breaker is a finding, naming until when and why") {
  ConsumerStats stats;
  stats.consumer = "email";
  stats.breaker = "closed";
  CHECK(consumer_health({stats}, {}, {}, {}, kNow)[0].findings.empty());
  stats.breaker = "open";
  stats.breaker_failures = 5;
  stats.breaker_open_until = kNow + minutes(1);
  stats.breaker_cool_down = minutes(1);
  auto all = consumer_health({stats}, {}, {}, {}, kNow);
  CHECK(checks_of(all[0]) == std::vector<std::string>{"breaker"});
  CHECK(all[0].severity == Severity::kWarning);
  CHECK(all[0].findings[0].detail ==
        "consumer email: circuit breaker open until 2027-01-15T08:01:00.000Z after 5 transient "
        "failure(s) in a row (cool-down 1m)");
  stats.breaker = "half-open";
  stats.breaker_open_until = kNow - minutes(1);
  all = consumer_health({stats}, {}, {}, {}, kNow);
  CHECK(
      all[0].findings[0].detail ==
      "consumer email: circuit breaker half-open since 2027-01-15T07:59:00.000Z after 5 transient "
      "failure(s) in a row (cool-down 1m)");
}
