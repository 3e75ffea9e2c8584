// `sluice migrate`: the one command that upgrades an older sluice schema (reading never does, so
// an older app still running on the file keeps working until the operator decides).
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#include "json_fields.hpp"
#include "sluice/database.hpp"

namespace sluice::cli {

void add_migrate_command(CLI::App& app, std::shared_ptr<Session> session) {
  struct Args {
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command =
      app.add_subcommand("migrate", "Upgrade the file's sluice schema to this sluice's version");
  command->footer(
      "Apps built with an older sluice refuse the file once it is upgraded: upgrade them first\n"
      "or together. A file without sluice tables is refused (see init).\nExample:\n  sluice "
      "--db app.db migrate");
  command->add_flag("--json", args->json, "Print {path, from, to}");
  command->callback([session, args]() {
    const int from = session->sluice_version();
    if (from < schema_version()) {
      open_database(session->db_path, session->options(), OpenMode::kExisting);
    }
    if (args->json) {
      return print_json(std::cout,
                        Json{{"path", session->db_path}, {"from", from}, {"to", schema_version()}});
    }
    if (from == schema_version()) {
      std::cout << session->db_path << " is at schema version " << from << " already\n";
    } else {
      std::cout << "migrated " << session->db_path << " from schema version " << from << " to "
                << schema_version() << '\n';
    }
  });
}

}  // namespace sluice::cli
