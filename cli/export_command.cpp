// `sluice export`: an incident file holding one event and everything recorded about its delivery,
// in the sluice schema, so a test can open it and replay the incident against a handler.
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "json_fields.hpp"
#include "sluice/database.hpp"
#include "sluice/inspect.hpp"
#include "usage_error.hpp"

namespace sluice::cli {
namespace {

std::string quoted(const std::string& identifier) { return "\"" + identifier + "\""; }

std::vector<std::string> columns_of(SQLite::Database& db, const std::string& schema,
                                    const std::string& table) {
  SQLite::Statement query(db, "SELECT name FROM pragma_table_info(?, ?)");
  query.bind(1, table);
  query.bind(2, schema);
  std::vector<std::string> columns;
  while (query.executeStep()) columns.push_back(query.getColumn(0).getString());
  return columns;
}

bool has_column(const std::vector<std::string>& columns, const std::string& name) {
  return std::find(columns.begin(), columns.end(), name) != columns.end();
}

// Copies into the attached `incident` database the rows of every sluice table that belong to
// `event`: the event itself, rows keyed by its seq or ID (deliveries, attempts, dead letters,
// seen marks), and the consumers and subscriptions they refer to. Claims are live state of a
// running worker and stay behind. Returns rows copied per table.
std::map<std::string, long long> copy_incident(SQLite::Database& db, const Event& event) {
  std::vector<std::string> tables;
  {
    SQLite::Statement query(db,
                            "SELECT name FROM incident.sqlite_master WHERE type = 'table' AND "
                            "name LIKE 'sluice\\_%' ESCAPE '\\' ORDER BY rowid");
    while (query.executeStep()) tables.push_back(query.getColumn(0).getString());
  }
  std::map<std::string, long long> copied;
  for (const std::string& table : tables) {
    if (table == "sluice_meta" || table == "sluice_claims") continue;
    const auto columns = columns_of(db, "incident", table);
    std::string condition;
    if (table == "sluice_events") {
      condition = "seq = :seq";
    } else if (has_column(columns, "event_seq")) {
      condition = "event_seq = :seq";
    } else if (has_column(columns, "event_id")) {
      condition = "event_id = :id";
    } else if (table == "sluice_consumers" || table == "sluice_subscriptions") {
      condition = "1";
    } else {
      continue;  // State of the whole file (counters, parked keys) says nothing about one event.
    }
    std::string column_list;
    for (const auto& column : columns)
      column_list += (column_list.empty() ? "" : ", ") + quoted(column);
    SQLite::Statement copy(db, "INSERT OR REPLACE INTO incident." + quoted(table) + " (" +
                                   column_list + ") SELECT " + column_list + " FROM main." +
                                   quoted(table) + " WHERE " + condition);
    if (condition.find(":seq") != std::string::npos) copy.bind(":seq", event.seq);
    if (condition.find(":id") != std::string::npos) copy.bind(":id", event.id);
    copied[table] = copy.exec();
  }
  return copied;
}

}  // namespace

void add_export_command(CLI::App& app, std::shared_ptr<Session> session) {
  struct Args {
    std::string event_id;
    std::string output;
    bool force = false;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command = app.add_subcommand(
      "export", "Write an incident file: one event with its deliveries, attempts and dead letters");
  command->footer(
      "The file is a standalone sluice database: open it with sluice::open_database (or load it\n"
      "into :memory:) and replay the incident against a handler in a unit test.\nExample:\n  "
      "sluice --db app.db export --event 01JD0F3W5R8M9K2Q7Y4T6V1B3N -o incident.db");
  command->add_option("--event", args->event_id, "The event's ID")->required();
  command->add_option("-o,--output", args->output, "The incident file to create")
      ->type_name("FILE")
      ->required();
  command->add_flag("--force", args->force, "Overwrite FILE if it exists");
  command->add_flag("--json", args->json, "Print {event_id, output, rows: {table: count}}");
  command->callback([session, args]() {
    SQLite::Database db = session->open();
    const Event event = find_event(db, args->event_id);
    if (std::filesystem::exists(args->output)) {
      if (!args->force) {
        throw UsageError("export: '" + args->output + "' exists; pass --force to overwrite it");
      }
      for (const char* suffix : {"", "-wal", "-shm"})
        std::filesystem::remove(args->output + suffix);
    }
    open_database(args->output, session->options(), OpenMode::kCreate);

    SQLite::Statement attach(db, "ATTACH DATABASE ? AS incident");
    attach.bind(1, args->output);
    attach.exec();
    std::map<std::string, long long> copied;
    try {
      SQLite::Transaction transaction(db);
      copied = copy_incident(db, event);
      transaction.commit();
    } catch (...) {
      db.exec("DETACH DATABASE incident");
      throw;
    }
    db.exec("DETACH DATABASE incident");

    if (args->json) {
      return print_json(std::cout,
                        Json{{"event_id", event.id}, {"output", args->output}, {"rows", copied}});
    }
    std::cout << "exported event " << event.id << " to " << args->output << " (";
    bool first = true;
    for (const auto& [table, rows] : copied) {
      std::cout << (first ? "" : ", ") << table << " " << rows;
      first = false;
    }
    std::cout << ")\n";
  });
}

}  // namespace sluice::cli
