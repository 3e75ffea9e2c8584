#include "result_tables.hpp"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "sluice/dead_letters.hpp"
#include "sluice/error.hpp"
#include "sluice/stats.hpp"
#include "sql_connection.hpp"
#include "time_format.hpp"

namespace sluice::sqlext {
namespace {

using Value = std::variant<std::monostate, std::int64_t, std::string>;
using Row = std::vector<Value>;

// One table: its columns and how its rows are read (at the start of each scan).
struct TableKind {
  const char* schema;
  std::vector<Row> (*rows)(SqlConnection&);
};

Value text_or_null(const std::string& text) { return text.empty() ? Value() : Value(text); }

std::vector<Row> stats_rows(SqlConnection& c) {
  std::vector<Row> rows;
  for (const ConsumerStats& s : consumer_stats(c.db())) {
    rows.push_back({s.consumer,
                    nlohmann::json(s.topics).dump(),
                    s.pending,
                    s.claimed,
                    s.retrying,
                    s.dead,
                    s.delivered_total,
                    s.retries_total,
                    s.snoozed_total,
                    static_cast<std::int64_t>(s.lag.count()),
                    s.parked_keys,
                    s.waiting_for_handler,
                    static_cast<std::int64_t>(s.paused ? 1 : 0),
                    s.paused_by.empty() ? Value{} : Value{to_millis(s.paused_since)},
                    s.paused_until ? Value{to_millis(*s.paused_until)} : Value{},
                    text_or_null(s.pause_note),
                    text_or_null(s.paused_by),
                    s.throttled_total,
                    s.breaker,
                    s.breaker_failures,
                    s.breaker_open_until ? Value{to_millis(*s.breaker_open_until)} : Value{},
                    static_cast<std::int64_t>(s.breaker_cool_down.count())});
  }
  return rows;
}

std::vector<Row> dead_letter_rows(SqlConnection& c) {
  std::vector<Row> rows;
  for (const DeadLetter& d : list_dead_letters(c.db(), {.include_discarded = true})) {
    rows.push_back({d.event_id, d.event_seq, d.consumer, d.topic, text_or_null(d.key), d.reason,
                    text_or_null(d.last_error), static_cast<std::int64_t>(d.attempts),
                    to_millis(d.first_failed_at), to_millis(d.last_failed_at),
                    static_cast<std::int64_t>(d.discarded ? 1 : 0), text_or_null(d.note),
                    text_or_null(d.trace_id)});
  }
  return rows;
}

const TableKind kStats = {
    "CREATE TABLE x(consumer TEXT, topics TEXT, pending INTEGER, claimed INTEGER, "
    "retrying INTEGER, dead INTEGER, delivered_total INTEGER, retries_total INTEGER, "
    "snoozed_total INTEGER, lag_ms INTEGER, parked_keys INTEGER, waiting_for_handler INTEGER, "
    "paused INTEGER, paused_since INTEGER, paused_until INTEGER, pause_note TEXT, paused_by TEXT, "
    "throttled_total INTEGER, breaker TEXT, breaker_failures INTEGER, breaker_open_until INTEGER, "
    "breaker_cool_down_ms INTEGER)",
    stats_rows};

const TableKind kDeadLetters = {
    "CREATE TABLE x(event_id TEXT, event_seq INTEGER, consumer TEXT, topic TEXT, key TEXT, "
    "reason TEXT, last_error TEXT, attempts INTEGER, first_failed_at INTEGER, "
    "last_failed_at INTEGER, discarded INTEGER, note TEXT, trace_id TEXT)",
    dead_letter_rows};

struct Table {
  sqlite3_vtab base{};
  sqlite3* db = nullptr;
  const TableKind* kind = nullptr;
};

struct Cursor {
  sqlite3_vtab_cursor base{};
  std::vector<Row> rows;
  std::size_t at = 0;
};

int connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** table, char**) {
  const auto* kind = static_cast<const TableKind*>(aux);
  const int rc = sqlite3_declare_vtab(db, kind->schema);
  if (rc != SQLITE_OK) return rc;
  auto* made = new Table();
  made->db = db;
  made->kind = kind;
  *table = &made->base;
  return SQLITE_OK;
}

int disconnect(sqlite3_vtab* table) {
  delete reinterpret_cast<Table*>(table);
  return SQLITE_OK;
}

int best_index(sqlite3_vtab*, sqlite3_index_info* info) {
  info->estimatedCost = 1000;
  return SQLITE_OK;
}

int open_cursor(sqlite3_vtab*, sqlite3_vtab_cursor** cursor) {
  *cursor = &(new Cursor())->base;
  return SQLITE_OK;
}

int close_cursor(sqlite3_vtab_cursor* cursor) {
  delete reinterpret_cast<Cursor*>(cursor);
  return SQLITE_OK;
}

int filter(sqlite3_vtab_cursor* base, int, const char*, int, sqlite3_value**) {
  auto* cursor = reinterpret_cast<Cursor*>(base);
  auto* table = reinterpret_cast<Table*>(base->pVtab);
  try {
    SqlConnection& c = SqlConnection::of(table->db);
    c.require_schema();
    cursor->rows = table->kind->rows(c);
    cursor->at = 0;
    return SQLITE_OK;
  } catch (const std::exception& e) {
    sqlite3_free(table->base.zErrMsg);
    table->base.zErrMsg = sqlite3_mprintf("%s", e.what());
    return SQLITE_ERROR;
  }
}

int next(sqlite3_vtab_cursor* base) {
  ++reinterpret_cast<Cursor*>(base)->at;
  return SQLITE_OK;
}

int eof(sqlite3_vtab_cursor* base) {
  const auto* cursor = reinterpret_cast<Cursor*>(base);
  return cursor->at >= cursor->rows.size() ? 1 : 0;
}

int column(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int i) {
  const auto* cursor = reinterpret_cast<Cursor*>(base);
  const Value& value = cursor->rows[cursor->at][static_cast<std::size_t>(i)];
  if (const auto* number = std::get_if<std::int64_t>(&value)) {
    sqlite3_result_int64(ctx, *number);
  } else if (const auto* text = std::get_if<std::string>(&value)) {
    sqlite3_result_text(ctx, text->data(), static_cast<int>(text->size()), SQLITE_TRANSIENT);
  } else {
    sqlite3_result_null(ctx);
  }
  return SQLITE_OK;
}

int rowid(sqlite3_vtab_cursor* base, sqlite3_int64* id) {
  *id = static_cast<sqlite3_int64>(reinterpret_cast<Cursor*>(base)->at);
  return SQLITE_OK;
}

// Eponymous only (no xCreate): `SELECT * FROM sluice_stats` needs no CREATE VIRTUAL TABLE.
const sqlite3_module kModule = {
    .iVersion = 0,
    .xCreate = nullptr,
    .xConnect = connect,
    .xBestIndex = best_index,
    .xDisconnect = disconnect,
    .xDestroy = nullptr,
    .xOpen = open_cursor,
    .xClose = close_cursor,
    .xFilter = filter,
    .xNext = next,
    .xEof = eof,
    .xColumn = column,
    .xRowid = rowid,
};

}  // namespace

void register_tables(sqlite3* db) {
  for (const auto& [name, kind] :
       {std::pair{"sluice_stats", &kStats}, std::pair{"sluice_dead_letters", &kDeadLetters}}) {
    const int rc =
        sqlite3_create_module_v2(db, name, &kModule, const_cast<TableKind*>(kind), nullptr);
    if (rc != SQLITE_OK) {
      throw DatabaseError(
          std::string("sluice: cannot register table ") + name + ": " + sqlite3_errmsg(db), rc);
    }
  }
}

}  // namespace sluice::sqlext
