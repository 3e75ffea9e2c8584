// `sluice init`: the one command that may create a file.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "json_fields.hpp"
#include "sluice/database.hpp"

namespace sluice::cli {

void add_init_command(CLI::App& app, std::shared_ptr<Session> session) {
  struct Args {
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command = app.add_subcommand("init", "Create or migrate the sluice schema in a file");
  command->footer("Example:\n  sluice --db app.db init");
  command->add_flag("--json", args->json, "Print {path, created, schema_version}");
  command->callback([session, args]() {
    session->require_path();
    const bool existed = std::filesystem::exists(session->db_path);
    SQLite::Database db = open_database(session->db_path, session->options(), OpenMode::kCreate);
    const int version = stored_schema_version(db);
    if (args->json) {
      print_json(
          std::cout,
          Json{{"path", session->db_path}, {"created", !existed}, {"schema_version", version}});
    } else {
      std::cout << (existed ? "ready: " : "created: ") << session->db_path << " (schema version "
                << version << ")\n";
    }
  });
}

}  // namespace sluice::cli
