// The health checks behind `sluice check` and the console's overview.
#pragma once

#include <string>
#include <vector>

#include "consumer_health.hpp"
#include "json_fields.hpp"
#include "session.hpp"
#include "severity.hpp"

namespace sluice::cli {

struct CheckResult {
  std::string name;
  Severity severity;
  std::string detail;
};

// Every check on the session's file, read-only; a file that does not open is one problem.
// `with_integrity`: run PRAGMA integrity_check, which reads the whole file (seconds on a large
// one), so the console's overview, polled every 2 s, leaves it to `sluice check`.
// `limits`: where the consumer checks (stuck, lag, claim_age) draw the line.
std::vector<CheckResult> run_checks(const Session& session, bool with_integrity = true,
                                    const HealthLimits& limits = {});

// As above, on `db` (a read-only connection to the file) with the consumers' `stats` already
// read from it: the console's overview reads them once for its rows and its checks.
std::vector<CheckResult> run_checks(SQLite::Database& db, const Options& options,
                                    const std::vector<ConsumerStats>& stats,
                                    const HealthLimits& limits = {});

// The verdict on each consumer of `stats` in the file `db` at `now`: the rules of
// consumer_health.hpp over the file's workers and claims. Reads only.
std::vector<ConsumerHealth> read_consumer_health(SQLite::Database& db,
                                                 const std::vector<ConsumerStats>& stats,
                                                 const Options& options, const HealthLimits& limits,
                                                 TimePoint now);

Severity worst_severity(const std::vector<CheckResult>& results);

// {status, checks: [{name, status, detail}]}: `sluice check --json`.
Json checks_json(const std::vector<CheckResult>& results);

}  // namespace sluice::cli
