// `sluice audit`: the operators' log of replays, discards, backfills and prunes.
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#include "format.hpp"
#include "json_fields.hpp"
#include "number_bounds.hpp"
#include "printable.hpp"
#include "sluice/audit.hpp"
#include "table.hpp"

namespace sluice::cli {

void add_audit_command(CLI::App& app, std::shared_ptr<Session> session) {
  struct Args {
    long long after = 0;
    int limit = 100;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command = app.add_subcommand(
      "audit",
      "The audit log: every replay, discard, backfill, prune and consumer removal, from the CLI, "
      "the console, SQL or an app");
  command->footer(
      "Oldest first. Reads only.\nExample:\n  sluice --db app.db audit\n  sluice --db app.db "
      "audit --after 120 --json");
  command->add_option("--after", args->after, "Entries after this ID (a page's last ID)")
      ->type_name("ID")
      ->check(whole_number_in(0));
  command->add_option("--limit", args->limit, "At most N entries (default 100)")
      ->type_name("N")
      ->check(whole_number_in(1, 1'000'000));
  command->add_flag("--json", args->json,
                    "Print {entries: [{id, at, action, filter, count, note, source}]}");
  command->callback([session, args]() {
    SQLite::Database db = session->open_read_only();
    const auto entries = list_audit(db, args->after, args->limit);
    if (args->json) {
      Json list = Json::array();
      for (const AuditEntry& entry : entries) list.push_back(audit_entry_json(entry));
      return print_json(std::cout, Json{{"entries", list}});
    }
    Table table({"ID", "AT", "ACTION", "SOURCE", "COUNT", "FILTER", "NOTE"});
    table.align_right(0);
    table.align_right(4);
    for (const AuditEntry& e : entries) {
      table.add_row({std::to_string(e.id), format_time(e.at), printable(e.action),
                     printable(e.source), std::to_string(e.count), printable(e.filter),
                     printable(e.note)});
    }
    table.print(std::cout, session->style());
    if (entries.empty()) std::cout << "(no actions recorded)\n";
  });
}

}  // namespace sluice::cli
