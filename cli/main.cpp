// The `sluice` command: inspect and repair a sluice file from outside the app, even while it runs.
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#ifdef SLUICE_WITH_NATS
#include "relay_command.hpp"
#endif
#include "exit_code.hpp"
#include "usage_error.hpp"

int main(int argc, char** argv) {
  using namespace sluice::cli;
  CLI::App app{"Inspect and repair the events in a sluice SQLite file, also while apps use it.",
               "sluice"};
  app.footer(std::string("Example:\n  sluice --db app.db stats\n  SLUICE_DB=app.db sluice dlq list "
                         "--group\n\nTimes are RFC 3339 (2026-11-29T10:30:00Z) or a duration ago "
                         "(2h); durations are\n30s, 15m, 12h, 7d. --json prints stable field names "
                         "(docs/operating.md).\nColour only on a terminal and never with NO_COLOR "
                         "set.\n\n") +
             kExitCodesHelp);
  app.fallthrough();

  auto session = std::make_shared<Session>();
  app.add_option("--db", session->db_path, "The sluice file (created only by init)")
      ->envname("SLUICE_DB");

  add_init_command(app, session);
  add_stats_command(app, session);
  add_events_command(app, session);
  add_show_command(app, session);
  add_tail_command(app, session);
  add_enqueue_command(app, session);
  add_dlq_command(app, session);
  add_replay_command(app, session);
  add_consumer_command(app, session);
  add_prune_command(app, session);
  add_check_command(app, session);
  add_export_command(app, session);
  add_metrics_command(app, session);
#ifdef SLUICE_WITH_NATS
  sluice::cli::add_nats_commands(app);
#endif

  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) throw UsageError("no command given (see sluice --help)");
  } catch (const CLI::Success& e) {  // --help
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "sluice: " << e.what() << " (see sluice --help)\n";
    return kExitUsage;
  } catch (...) {
    return report_error(std::current_exception(), std::cerr);
  }
  return session->exit_code;
}
