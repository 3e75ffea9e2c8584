// `sluice replay`: backfill one consumer from retained history.
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#include "format.hpp"
#include "json_fields.hpp"
#include "printable.hpp"
#include "sluice/audit.hpp"
#include "sluice/backfill.hpp"
#include "usage_error.hpp"

namespace sluice::cli {

void add_replay_command(CLI::App& app, std::shared_ptr<Session> session) {
  struct Args {
    std::string consumer;
    std::string since;
    std::string until;
    std::string from_event;
    bool dry_run = false;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command = app.add_subcommand(
      "replay", "Re-deliver retained events to one consumer (backfill), clearing its seen marks");
  command->footer(
      "Example:\n  sluice --db app.db replay --consumer search-index --since 2026-11-28T00:00:00Z "
      "--dry-run\n  sluice --db app.db replay --consumer search-index --from-event "
      "01JD0F3W5R8M9K2Q7Y4T6V1B3N");
  command->add_option("--consumer", args->consumer, "The consumer to re-feed")->required();
  auto* since = command
                    ->add_option("--since", args->since,
                                 "Events created at or after TIME (RFC 3339 or e.g. 2h)")
                    ->type_name("TIME");
  auto* from_event =
      command->add_option("--from-event", args->from_event, "Events from this one on")
          ->type_name("ID");
  since->excludes(from_event);
  command->add_option("--until", args->until, "With --since: created before TIME")
      ->type_name("TIME")
      ->needs(since);
  command->add_flag("--dry-run", args->dry_run, "Count the events; queue nothing");
  command->add_flag("--json", args->json, "Print {consumer, dry_run, events}");
  command->callback([session, args]() {
    if (args->since.empty() && args->from_event.empty()) {
      throw UsageError("replay needs --since TIME or --from-event ID");
    }
    BackfillRange range;
    range.from_event_id = args->from_event;
    const TimePoint now = system_clock()->now();
    if (!args->since.empty()) range.since = parse_time_or_ago(args->since, now);
    if (!args->until.empty()) range.until = parse_time_or_ago(args->until, now);
    SQLite::Database db = session->open();
    Json filter{{"consumer", args->consumer}};
    if (!args->from_event.empty()) filter["from_event"] = args->from_event;
    if (!args->since.empty()) filter["since"] = args->since;
    if (!args->until.empty()) filter["until"] = args->until;
    AuditEntry audit{.filter = json_text(filter), .source = "cli"};
    const long long events = args->dry_run
                                 ? count_backfill(db, args->consumer, range)
                                 : backfill(db, args->consumer, range, session->options(), audit);
    if (args->json) {
      return print_json(
          std::cout,
          Json{{"consumer", args->consumer}, {"dry_run", args->dry_run}, {"events", events}});
    }
    std::cout << (args->dry_run ? "would queue " : "queued ") << events << " event(s) for "
              << printable(args->consumer) << '\n';
  });
}

}  // namespace sluice::cli
