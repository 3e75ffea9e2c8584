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

// The first word on the command line after the commands of `path` ("dlq" for `sluice dlq lst`)
// that is neither an option nor an option's value: the (sub)command the user meant.
std::string word_after(int argc, char** argv, const std::vector<std::string>& path) {
  std::size_t matched = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--db" || arg == "--busy-timeout") {
      ++i;
    } else if (!arg.empty() && arg[0] != '-') {
      if (matched == path.size()) return arg;
      if (arg == path[matched]) ++matched;
    }
  }
  return "";
}

// "unknown command 'dlq lst'; did you mean 'dlq list'?" when the deepest command given takes
// subcommands and the word after it is none of them; "" otherwise.
std::string unknown_command(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> path;
  const CLI::App* current = &app;
  while (!current->get_subcommands().empty()) {
    current = current->get_subcommands().front();
    path.push_back(current->get_name());
  }
  std::vector<std::string> commands;
  for (const CLI::App* command : current->get_subcommands({})) {
    commands.push_back(command->get_name());
  }
  const std::string word = word_after(argc, argv, path);
  if (commands.empty() || word.empty()) return "";
  std::string prefix;
  for (const std::string& name : path) prefix += name + " ";
  std::string message = "unknown command '" + prefix + word + "'";
  const std::string meant = sluice::cli::nearest(word, commands);
  if (!meant.empty()) message += "; did you mean '" + prefix + meant + "'?";
  return message;
}

// The command line with each --json given before the command it is for (`sluice --json stats`,
// `sluice dlq --json list`) moved to the end: --json is every command's own flag, and read as
// the root's it was refused with a pointer to the help of a command that has it.
std::vector<char*> json_after_command(int argc, char** argv, const CLI::App& app) {
  std::vector<char*> front{argv[0]};
  std::vector<char*> moved;
  const CLI::App* command = &app;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json") {
      moved.push_back(argv[i]);
      continue;
    }
    front.push_back(argv[i]);
    if (arg == "--db" || arg == "--busy-timeout") {
      if (i + 1 < argc) front.push_back(argv[++i]);
    } else if (!arg.empty() && arg[0] != '-') {
      // A command: the line is left as it is from its last subcommand on.
      const CLI::App* sub = nullptr;
      for (const CLI::App* candidate : command->get_subcommands({})) {
        if (candidate->get_name() == arg) sub = candidate;
      }
      if (sub == nullptr) break;
      command = sub;
      if (command->get_subcommands({}).empty()) break;
    }
  }
  for (++i; i < argc; ++i) front.push_back(argv[i]);
  front.insert(front.end(), moved.begin(), moved.end());
  return front;
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

  std::vector<char*> line = json_after_command(argc, argv, app);
  argc = static_cast<int>(line.size());
  argv = line.data();
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) throw UsageError("no command given");
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    const std::string unknown = unknown_command(app, argc, argv);
    if (!unknown.empty()) message = unknown;
    std::cerr << "sluice: " << message << " (see " << command_path(app) << " --help)\n";
    return kExitUsage;
  } catch (const UsageError& e) {
    // A library error wrapped as a usage error already names the program.
    std::string message = e.what();
    if (message.rfind("sluice: ", 0) == 0) message.erase(0, std::string("sluice: ").size());
    std::cerr << "sluice: " << message << " (see " << command_path(app) << " --help)\n";
    return kExitUsage;
  } catch (...) {
    return report_error(std::current_exception(), std::cerr);
  }
  return session->exit_code;
}
