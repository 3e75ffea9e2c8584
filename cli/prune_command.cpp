// `sluice prune`: delete finished history older than a retention, in short batches.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#include "format.hpp"
#include "json_fields.hpp"
#include "progress_bar.hpp"
#include "retention_views.hpp"
#include "sluice/audit.hpp"
#include "sluice/retention.hpp"
#include "usage_error.hpp"

namespace sluice::cli {

void add_prune_command(CLI::App& app, std::shared_ptr<Session> session) {
  struct Args {
    std::string older_than;
    bool dry_run = false;
    bool force = false;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command = app.add_subcommand(
      "prune", "Delete events every consumer has finished, older than a retention");
  command->footer(
      "Pending, retrying, claimed and dead-lettered work is never pruned. A retention under the\n"
      "dedup horizon (the longest retry span) is refused without --force: a duplicate could slip "
      "in.\nAfterwards it says which consumers keep older events, and why (a consumer that is no\n"
      "longer run keeps every later event: sluice consumer remove NAME).\nExample:\n  sluice --db "
      "app.db prune --older-than 7d --dry-run");
  command->add_option("--older-than", args->older_than, "Retention, e.g. 7d")
      ->type_name("DUR")
      ->required();
  command->add_flag("--dry-run", args->dry_run, "Count only; delete nothing");
  command->add_flag("--force", args->force, "Allow a retention under the dedup horizon");
  command->add_flag("--json", args->json,
                    "Print {dry_run, older_than, dedup_horizon, pruned, held_back: [...]}");
  command->callback([session, args]() {
    const Duration retention = parse_duration(args->older_than);
    SQLite::Database db = session->open();
    const Options options = session->options();
    const Duration horizon = dedup_horizon(db, options);
    if (retention < horizon && !args->force) {
      throw UsageError("refusing to prune: --older-than " + format_duration(retention) +
                       " is under the dedup horizon " + format_duration(horizon) +
                       " (the longest retry span); pass --force to prune anyway");
    }
    PruneOptions prune_options;
    prune_options.force = args->force;
    prune_options.dry_run = args->dry_run;
    std::vector<RetentionHold> held_back;
    prune_options.held_back = &held_back;
    long long pruned = 0;
    Json filter{{"older_than", format_duration(retention)}};
    if (args->force) filter["force"] = true;
    AuditEntry audit{.filter = json_text(filter), .source = "cli"};
    const bool show_progress = !args->dry_run && is_terminal(STDERR_FILENO);
    if (show_progress) {
      PruneOptions count_only = prune_options;
      count_only.dry_run = true;
      count_only.held_back = nullptr;
      const long long total = prune(db, retention, count_only, options);
      ProgressBar bar(std::cerr, "prune", total, true);
      prune_options.progress = [&bar](long long done) { bar.update(done); };
      pruned = prune(db, retention, prune_options, options, audit);
    } else {
      pruned = prune(db, retention, prune_options, options, audit);
    }
    if (args->json) {
      Json holds = Json::array();
      for (const RetentionHold& hold : held_back) holds.push_back(hold_json(hold));
      return print_json(std::cout, Json{{"dry_run", args->dry_run},
                                        {"older_than", format_duration(retention)},
                                        {"dedup_horizon", format_duration(horizon)},
                                        {"pruned", pruned},
                                        {"held_back", holds}});
    }
    std::cout << (args->dry_run ? "would prune " : "pruned ") << pruned << " event(s) older than "
              << format_duration(retention) << '\n';
    const TimePoint now = system_clock()->now();
    for (const RetentionHold& hold : held_back) {
      std::cout << "kept: " << describe_hold(hold, now) << '\n';
    }
  });
}

}  // namespace sluice::cli
