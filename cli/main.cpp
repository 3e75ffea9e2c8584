// The `sluice` command: inspect and repair a sluice file from outside the app, even while it runs.
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#ifdef SLUICE_WITH_NATS
#include "relay_command.hpp"
#endif
#include "exit_code.hpp"
#include "format.hpp"
#include "sluice/database.hpp"
#include "suggest.hpp"
#include "usage_error.hpp"

namespace {

// "sluice dlq show": the command being parsed when an error came, for its --help.
std::string command_path(const CLI::App& app) {
  std::string path = "sluice";
  const CLI::App* current = &app;
  while (!current->get_subcommands().empty()) {
    current = current->get_subcommands().front();
    path += " " + current->get_name();
  }
  return path;
}

// The first word on the command line that is neither an option nor an option's value: the
// command the user meant.
std::string first_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--db" || arg == "--busy-timeout") {
      ++i;
    } else if (arg.empty() || arg[0] != '-') {
      return arg;
    }
  }
  return "";
}

}  // namespace

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
  app.set_version_flag("--version", std::string("sluice " SLUICE_VERSION " (schema version ") +
                                        std::to_string(sluice::schema_version()) + ")");

  auto session = std::make_shared<Session>();
  app.add_option("--db", session->db_path, "The sluice file (created only by init)")
      ->envname("SLUICE_DB");
  app.add_option_function<std::string>(
         "--busy-timeout",
         [session](const std::string& text) { session->busy_timeout = parse_duration(text); },
         "How long to wait for another connection's write lock (default " +
             format_duration(session->busy_timeout) + ")")
      ->type_name("DUR");

  add_init_command(app, session);
  add_migrate_command(app, session);
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
  add_audit_command(app, session);
  add_workers_command(app, session);
  add_console_command(app, session);
#ifdef SLUICE_WITH_NATS
  sluice::cli::add_nats_commands(app);
#endif

  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) throw UsageError("no command given");
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    if (app.get_subcommands().empty()) {
      const std::string word = first_word(argc, argv);
      std::vector<std::string> commands;
      for (const CLI::App* command : app.get_subcommands({}))
        commands.push_back(command->get_name());
      if (!word.empty()) {
        message = "unknown command '" + word + "'";
        const std::string meant = nearest(word, commands);
        if (!meant.empty()) message += "; did you mean '" + meant + "'?";
      }
    }
    std::cerr << "sluice: " << message << " (see " << command_path(app) << " --help)\n";
    return kExitUsage;
  } catch (const UsageError& e) {
    std::cerr << "sluice: " << e.what() << " (see " << command_path(app) << " --help)\n";
    return kExitUsage;
  } catch (...) {
    return report_error(std::current_exception(), std::cerr);
  }
  return session->exit_code;
}
