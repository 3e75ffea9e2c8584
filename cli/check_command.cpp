// `sluice check`: a health verdict fit for cron and probes (exit 0 healthy, 1 warnings,
// 4 problems).
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#include "exit_code.hpp"
#include "format.hpp"
#include "health_checks.hpp"
#include "json_fields.hpp"
#include "printable.hpp"
#include "table.hpp"
#include "usage_error.hpp"

namespace sluice::cli {
namespace {

Duration parse_option_duration(const std::string& option, const std::string& text) {
  try {
    return parse_duration(text);
  } catch (const UsageError& e) {
    throw UsageError("invalid " + option + ": " + e.what());
  }
}

}  // namespace

void add_check_command(CLI::App& app, std::shared_ptr<Session> session) {
  struct Args {
    bool json = false;
    std::string max_lag = "5m";
    std::string max_claim_age = "10m";
    std::string max_pause = "1h";
  };
  auto args = std::make_shared<Args>();
  CLI::App* command = app.add_subcommand(
      "check", "Health check: exit 0 healthy, 1 warnings, 4 problems (for cron and probes)");
  command->footer(
      "Checks: file, integrity (PRAGMA integrity_check), schema version, dedup_horizon,\n"
      "expired_claims, dead_letters, parked_keys, stuck (a consumer with due work and no live\n"
      "worker, see sluice workers), lag (over --max-lag), claim_age (a batch held over\n"
      "--max-claim-age), paused (a consumer paused over --max-pause), retention (a consumer keeps "
      "events older than 1d from prune: no worker\n"
      "of it took them), no_handler (events left 15m or more for a handler no running worker\n"
      "has), and ingest_positions for a file a NATS ingester writes to. Reads only.\n"
      "Example:\n  sluice --db app.db check --json || alert\n  sluice --db app.db check "
      "--max-lag 15m");
  command->add_flag("--json", args->json, "Print {status, checks: [{name, status, detail}]}");
  command
      ->add_option("--max-lag", args->max_lag,
                   "Warn when a consumer's oldest due event is older than this")
      ->type_name("DURATION")
      ->capture_default_str();
  command
      ->add_option("--max-claim-age", args->max_claim_age,
                   "Warn when a worker has held one batch longer than this (a hung handler)")
      ->type_name("DURATION")
      ->capture_default_str();
  command
      ->add_option("--max-pause", args->max_pause,
                   "Warn when a consumer has been paused longer than this (forgotten?)")
      ->type_name("DURATION")
      ->capture_default_str();
  command->callback([session, args]() {
    session->require_path();
    const HealthLimits limits{
        .max_lag = parse_option_duration("--max-lag", args->max_lag),
        .max_claim_age = parse_option_duration("--max-claim-age", args->max_claim_age),
        .max_pause = parse_option_duration("--max-pause", args->max_pause)};
    const auto results = run_checks(*session, true, limits);
    const Severity worst = worst_severity(results);
    if (args->json) {
      print_json(std::cout, checks_json(results));
    } else {
      const Style style = session->style();
      Table table({"CHECK", "STATUS", "DETAIL"});
      for (const CheckResult& r : results) {
        const std::string status = severity_name(r.severity);
        table.add_row({printable(r.name),
                       r.severity == Severity::kOk        ? style.green(status)
                       : r.severity == Severity::kWarning ? style.yellow(status)
                                                          : style.red(status),
                       printable(r.detail)});
      }
      table.print(std::cout, style);
    }
    session->exit_code = worst == Severity::kOk        ? kExitOk
                         : worst == Severity::kWarning ? kExitWarnings
                                                       : kExitProblems;
  });
}

}  // namespace sluice::cli
