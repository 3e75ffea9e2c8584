// `sluice export`: an incident file holding one event and everything recorded about its delivery,
// in the sluice schema, so a test can open it and replay the incident against a handler.
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <string_view>

#include "commands.hpp"
#include "json_fields.hpp"
#include "printable.hpp"
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

// A file URI for `path` with `query` ("mode=ro"): every byte but unreserved ones percent-encoded.
std::string file_uri(const std::string& path, const std::string& query) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string uri = "file:";
  for (const unsigned char c : path) {
    if (std::isalnum(c) ||
        std::string_view("/._-~").find(static_cast<char>(c)) != std::string_view::npos) {
      uri += static_cast<char>(c);
    } else {
      uri += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return uri + "?" + query;
}

// Copies into the incident file (`main`) from the attached `source` database the rows of every
// sluice table that belong to `event`: the event itself, rows keyed by its seq or ID (deliveries,
// attempts, dead letters, seen marks), and the consumers and subscriptions they refer to. Claims
// are live state of a running worker and stay behind. Returns rows copied per table.
std::map<std::string, long long> copy_incident(SQLite::Database& db, const Event& event) {
  std::vector<std::string> tables;
  {
    SQLite::Statement query(db,
                            "SELECT name FROM main.sqlite_master WHERE type = 'table' AND "
                            "name LIKE 'sluice\\_%' ESCAPE '\\' ORDER BY rowid");
    while (query.executeStep()) tables.push_back(query.getColumn(0).getString());
  }
  std::map<std::string, long long> copied;
  for (const std::string& table : tables) {
    if (table == "sluice_meta" || table == "sluice_claims") continue;
    const auto columns = columns_of(db, "main", table);
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
    SQLite::Statement copy(db, "INSERT OR REPLACE INTO main." + quoted(table) + " (" + column_list +
                                   ") SELECT " + column_list + " FROM source." + quoted(table) +
                                   " WHERE " + condition);
    if (condition.find(":seq") != std::string::npos) copy.bind(":seq", event.seq);
    if (condition.find(":id") != std::string::npos) copy.bind(":id", event.id);
    copied[table] = copy.exec();
  }
  return copied;
}

// Throws UsageError when writing `output` (and its -wal and -shm, which --force deletes) would
// touch the source file `source` or its journals: the same file by device and inode (a hard or
// symbolic link), or the same path once made canonical (one not created yet).
void refuse_source_as_output(const std::string& output, const std::string& source) {
  namespace fs = std::filesystem;
  const std::string canonical_source = fs::weakly_canonical(source).string();
  for (const char* output_suffix : {"", "-wal", "-shm"}) {
    const std::string target = output + output_suffix;
    const std::string canonical_target = fs::weakly_canonical(target).string();
    for (const char* source_suffix : {"", "-wal", "-shm", "-journal"}) {
      std::error_code no_such_file;
      if (fs::equivalent(target, source + source_suffix, no_such_file) ||
          canonical_target == canonical_source + source_suffix) {
        throw UsageError("export: '" + output + "' is the database being exported (" + source +
                         "); write the incident to another file");
      }
    }
  }
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
      "sluice --db app.db export 01JD0F3W5R8M9K2Q7Y4T6V1B3N -o incident.db");
  auto* positional = command->add_option("EVENT_ID", args->event_id, "The event's ID");
  command->add_option("--event", args->event_id, "The event's ID (as EVENT_ID)")
      ->excludes(positional);
  command->add_option("-o,--output", args->output, "The incident file to create")
      ->type_name("FILE")
      ->required();
  command->add_flag("--force", args->force,
                    "Overwrite FILE if it exists (never the --db file or its -wal, -shm)");
  command->add_flag("--json", args->json, "Print {event_id, output, rows: {table: count}}");
  command->callback([session, args]() {
    if (args->event_id.empty()) throw UsageError("export: no EVENT_ID given");
    const Event event = [&] {
      SQLite::Database db = session->open_read_only();
      return find_event(db, args->event_id);
    }();
    refuse_source_as_output(args->output, session->db_path);
    if (std::filesystem::exists(args->output)) {
      if (!args->force) {
        throw UsageError("export: '" + args->output + "' exists; pass --force to overwrite it");
      }
      for (const char* suffix : {"", "-wal", "-shm"})
        std::filesystem::remove(args->output + suffix);
    }
    open_database(args->output, session->options(), OpenMode::kCreate);
    // The incident file is the connection's main database and the source is attached read-only
    // (an attached database shares its connection's flags, so not the other way round).
    SQLite::Database db(file_uri(args->output, "mode=rw"),
                        SQLite::OPEN_READWRITE | SQLite::OPEN_URI);
    configure_connection(db, session->options());
    SQLite::Statement attach(db, "ATTACH DATABASE ? AS source");
    attach.bind(1, file_uri(session->db_path, "mode=ro"));
    attach.exec();
    SQLite::Transaction transaction(db);
    const auto copied = copy_incident(db, event);
    transaction.commit();

    if (args->json) {
      return print_json(std::cout,
                        Json{{"event_id", event.id}, {"output", args->output}, {"rows", copied}});
    }
    std::cout << "exported event " << printable(event.id) << " to " << printable(args->output)
              << " (";
    bool first = true;
    for (const auto& [table, rows] : copied) {
      std::cout << (first ? "" : ", ") << table << " " << rows;
      first = false;
    }
    std::cout << ")\n";
  });
}

}  // namespace sluice::cli
