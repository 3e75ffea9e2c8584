#include "health_checks.hpp"

#include <SQLiteCpp/Statement.h>

#include "file_not_ready.hpp"
#include "format.hpp"
#include "retention_views.hpp"
#include "sluice/database.hpp"
#include "sluice/error.hpp"
#include "sluice/inspect.hpp"
#include "sluice/retention.hpp"
#include "sluice/stats.hpp"
#include "sluice/workers.hpp"

namespace sluice::cli {
namespace {

// A consumer keeping events older than this from prune pins retention.
constexpr Duration kPinnedAfter = std::chrono::hours(24);
// Events left for a handler this long have none among the running workers.
constexpr Duration kUnhandledAfter = std::chrono::minutes(15);

}  // namespace

namespace {

// A failed open is a problem whose name says which check would have caught it.
CheckResult open_failure(const std::exception& e) {
  const char* name = "database";
  if (dynamic_cast<const FileNotReady*>(&e) != nullptr) {
    name = "schema";
  } else if (dynamic_cast<const NotFound*>(&e) != nullptr ||
             dynamic_cast<const NotADatabaseError*>(&e) != nullptr) {
    name = "file";
  } else if (dynamic_cast<const CorruptDatabaseError*>(&e) != nullptr) {
    name = "integrity";
  } else if (dynamic_cast<const SchemaVersionError*>(&e) != nullptr) {
    name = "schema";
  }
  return {name, Severity::kProblem, e.what()};
}

CheckResult check_integrity(SQLite::Database& db) {
  std::string findings;
  int count = 0;
  try {
    SQLite::Statement query(db, "PRAGMA integrity_check");
    while (query.executeStep()) {
      const std::string line = query.getColumn(0).getString();
      if (line == "ok") continue;
      if (count++ < 3) findings += (findings.empty() ? "" : "; ") + line;
    }
  } catch (const SQLite::Exception& e) {
    // A damaged root page fails the check itself (SQLITE_CORRUPT) rather than giving findings.
    return {"integrity", Severity::kProblem,
            std::string("PRAGMA integrity_check failed: ") + e.what()};
  }
  if (count == 0) return {"integrity", Severity::kOk, "PRAGMA integrity_check: ok"};
  return {"integrity", Severity::kProblem,
          std::to_string(count) + " finding(s) from PRAGMA integrity_check: " + findings};
}

// The file opened read-only only at this sluice's version; any other is an open failure.
CheckResult check_schema(SQLite::Database& db) {
  return {"schema", Severity::kOk, "version " + std::to_string(stored_schema_version(db))};
}

// Names where the figure comes from: a consumer's recorded policy, or the default policy, which
// is a floor (prune never keeps less than it), so one not seen in the consumers is no surprise.
CheckResult check_dedup_horizon(SQLite::Database& db, const Options& options) {
  const Duration horizon = dedup_horizon(db, options);
  const std::string source = horizon > options.retry.longest_span()
                                 ? "the longest retry span of a consumer in the file"
                                 : "the default retry policy's span, a floor above every "
                                   "consumer's own";
  return {"dedup_horizon", Severity::kOk,
          format_duration(horizon) + " (" + source + "): prune with --older-than at least this"};
}

CheckResult check_expired_claims(SQLite::Database& db, const Options& options) {
  const long long expired = claims_past_lease(db, system_clock()->now());
  if (expired == 0) return {"expired_claims", Severity::kOk, "none past the claim lease"};
  return {"expired_claims", Severity::kWarning,
          std::to_string(expired) + " claim(s) past their " + format_duration(options.claim_lease) +
              " lease: a worker may be stuck"};
}

CheckResult check_retention(SQLite::Database& db, const Options& options) {
  const TimePoint now = system_clock()->now();
  std::string pins;
  for (const RetentionHold& hold : pinned_holds(db, kPinnedAfter, options)) {
    pins += (pins.empty() ? "" : "; ") + describe_hold(hold, now);
  }
  if (pins.empty()) {
    return {"retention", Severity::kOk,
            "no consumer keeps events older than " + format_duration(kPinnedAfter) + " from prune"};
  }
  return {"retention", Severity::kWarning, pins};
}

CheckResult check_waiting_for_handler(SQLite::Database& db, const Options& options) {
  const TimePoint now = system_clock()->now();
  std::string waits;
  for (const HandlerWait& wait : waiting_for_handler(db, kUnhandledAfter, options)) {
    waits += (waits.empty() ? "" : "; ") + std::to_string(wait.events) + " event(s) of consumer " +
             wait.consumer + " (topic " + wait.topic +
             ") wait for a handler no running worker has registered, the oldest " +
             format_duration(now - wait.oldest) + " old";
  }
  if (waits.empty()) {
    return {"no_handler", Severity::kOk,
            "no event waits longer than " + format_duration(kUnhandledAfter) + " for a handler"};
  }
  return {"no_handler", Severity::kWarning, waits};
}

std::vector<CheckResult> check_counts(const std::vector<ConsumerStats>& stats) {
  long long dead = 0;
  long long parked = 0;
  std::string dead_by, parked_by;
  for (const ConsumerStats& s : stats) {
    dead += s.dead;
    parked += s.parked_keys;
    if (s.dead > 0)
      dead_by += (dead_by.empty() ? "" : ", ") + s.consumer + " " + std::to_string(s.dead);
    if (s.parked_keys > 0) {
      parked_by +=
          (parked_by.empty() ? "" : ", ") + s.consumer + " " + std::to_string(s.parked_keys);
    }
  }
  return {dead == 0 ? CheckResult{"dead_letters", Severity::kOk, "none"}
                    : CheckResult{"dead_letters", Severity::kWarning,
                                  std::to_string(dead) + " dead letter(s): " + dead_by +
                                      " (see sluice dlq list --group)"},
          parked == 0 ? CheckResult{"parked_keys", Severity::kOk, "none"}
                      : CheckResult{"parked_keys", Severity::kWarning,
                                    std::to_string(parked) +
                                        " key(s) held back by a dead letter: " + parked_by}};
}

// The consumer rules (consumer_health.hpp) as five checks, each naming every consumer that
// breaks it.
std::vector<CheckResult> check_consumers(const std::vector<ConsumerHealth>& health,
                                         const HealthLimits& limits) {
  struct Rule {
    const char* check;
    std::string fine;
  };
  const Rule rules[] = {
      {"stuck", "no consumer has due work without a live worker"},
      {"lag", "no consumer's lag is over --max-lag " + format_duration(limits.max_lag)},
      {"claim_age", "no claim has held its batch longer than --max-claim-age " +
                        format_duration(limits.max_claim_age)},
      {"paused",
       "no consumer has been paused longer than --max-pause " + format_duration(limits.max_pause)},
      {"breaker", "no consumer's circuit breaker is open"},
  };
  std::vector<CheckResult> results;
  for (const Rule& rule : rules) {
    std::string details;
    for (const ConsumerHealth& consumer : health) {
      for (const HealthFinding& finding : consumer.findings) {
        if (finding.check == rule.check) details += (details.empty() ? "" : "; ") + finding.detail;
      }
    }
    results.push_back(details.empty() ? CheckResult{rule.check, Severity::kOk, rule.fine}
                                      : CheckResult{rule.check, Severity::kWarning, details});
  }
  return results;
}

// Only for a file a NATS ingester writes to: where each stands in its stream.
std::optional<CheckResult> check_ingest_positions(SQLite::Database& db) {
  const std::vector<IngestPosition> positions = ingest_positions(db);
  if (positions.empty()) return std::nullopt;
  std::string detail;
  for (const IngestPosition& p : positions) {
    detail += (detail.empty() ? "" : ", ") + p.stream + "/" + p.durable + " at stream seq " +
              std::to_string(p.stream_seq);
  }
  return CheckResult{"ingest_positions", Severity::kOk, detail};
}

}  // namespace

std::vector<ConsumerHealth> read_consumer_health(SQLite::Database& db,
                                                 const std::vector<ConsumerStats>& stats,
                                                 const Options& options, const HealthLimits& limits,
                                                 TimePoint now) {
  return consumer_health(stats, list_workers(db, options), held_claims(db, options), limits, now);
}

std::vector<CheckResult> run_checks(const Session& session, bool with_integrity,
                                    const HealthLimits& limits) {
  std::optional<SQLite::Database> db;
  try {
    db.emplace(session.open_read_only());
  } catch (const Error& e) {
    return {open_failure(e)};
  } catch (const FileNotReady& e) {
    return {open_failure(e)};
  }
  std::vector<CheckResult> results;
  if (with_integrity) {
    results.push_back(check_integrity(*db));
    if (results.back().severity == Severity::kProblem) return results;
  }
  const Options options = session.options();
  try {
    for (CheckResult& result : run_checks(*db, options, consumer_stats(*db, options), limits)) {
      results.push_back(std::move(result));
    }
  } catch (const Error& e) {
    // A file the integrity check passes may still not be the shape its schema version says
    // (a table that lost a column): reported as the problem it is, never thrown.
    results.push_back({"schema", Severity::kProblem, e.what()});
  }
  return results;
}

std::vector<CheckResult> run_checks(SQLite::Database& db, const Options& options,
                                    const std::vector<ConsumerStats>& stats,
                                    const HealthLimits& limits) {
  std::vector<CheckResult> results;
  results.push_back(check_schema(db));
  results.push_back(check_dedup_horizon(db, options));
  results.push_back(check_expired_claims(db, options));
  for (CheckResult& result : check_counts(stats)) results.push_back(std::move(result));
  const auto health = read_consumer_health(db, stats, options, limits, system_clock()->now());
  for (CheckResult& result : check_consumers(health, limits)) results.push_back(std::move(result));
  results.push_back(check_retention(db, options));
  results.push_back(check_waiting_for_handler(db, options));
  if (auto positions = check_ingest_positions(db)) results.push_back(std::move(*positions));
  return results;
}

Severity worst_severity(const std::vector<CheckResult>& results) {
  Severity worst = Severity::kOk;
  for (const CheckResult& r : results) worst = std::max(worst, r.severity);
  return worst;
}

Json checks_json(const std::vector<CheckResult>& results) {
  Json checks = Json::array();
  for (const CheckResult& r : results) {
    checks.push_back(
        Json{{"name", r.name}, {"status", severity_name(r.severity)}, {"detail", r.detail}});
  }
  return Json{{"status", severity_name(worst_severity(results))}, {"checks", checks}};
}

}  // namespace sluice::cli
