#include "sqlite_api.hpp"

// Prototypes and the API table's type, without sqlite3ext.h's macros that turn every sqlite3_*
// name into a member of the table: here those names are defined.
#define SQLITE_CORE 1
#include <sqlite3ext.h>

#include <cstdarg>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

// Defined by SQLITE_EXTENSION_INIT1 in extension.cpp, set when the host loads the extension.
extern const sqlite3_api_routines* sqlite3_api;

namespace {

constexpr const char* kAdoptPrefix = "sluice-adopt:";

std::mutex adopted_mutex;

// Connections of the host with SQLite::Database objects over them, and how many.
std::map<sqlite3*, int>& adopted() {
  static auto* all = new std::map<sqlite3*, int>();  // a connection may close at exit
  return *all;
}

// The connection a name made by adopt_connection stands for, or null for any other name.
sqlite3* adopted_handle(const char* name) {
  const std::string text = name == nullptr ? "" : name;
  if (text.rfind(kAdoptPrefix, 0) != 0) return nullptr;
  void* handle = nullptr;
  if (std::sscanf(text.c_str() + std::char_traits<char>::length(kAdoptPrefix), "%p", &handle) != 1)
    return nullptr;
  std::lock_guard lock(adopted_mutex);
  const auto found = adopted().find(static_cast<sqlite3*>(handle));
  return found == adopted().end() ? nullptr : found->first;
}

// True if `db` is an adopted connection, which one adoption fewer now refers to.
bool release_adopted(sqlite3* db) {
  std::lock_guard lock(adopted_mutex);
  const auto found = adopted().find(db);
  if (found == adopted().end()) return false;
  if (--found->second == 0) adopted().erase(found);
  return true;
}

}  // namespace

namespace sluice::sqlext {

SQLite::Database adopt_connection(sqlite3* db) {
  {
    std::lock_guard lock(adopted_mutex);
    ++adopted()[db];
  }
  char name[64];
  std::snprintf(name, sizeof name, "%s%p", kAdoptPrefix, static_cast<void*>(db));
  return SQLite::Database(name, SQLite::OPEN_READWRITE);
}

}  // namespace sluice::sqlext

extern "C" {

int sqlite3_open_v2(const char* name, sqlite3** db, int flags, const char* vfs) {
  if (sqlite3* host = adopted_handle(name)) {
    *db = host;
    return SQLITE_OK;
  }
  return sqlite3_api->open_v2(name, db, flags, vfs);
}

int sqlite3_close(sqlite3* db) {
  if (release_adopted(db)) return SQLITE_OK;
  return sqlite3_api->close(db);
}

int sqlite3_close_v2(sqlite3* db) {
  if (release_adopted(db)) return SQLITE_OK;
  return sqlite3_api->close_v2(db);
}

// SQLiteCpp calls it only with an int and an int* (SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION).
int sqlite3_db_config(sqlite3* db, int op, ...) {
  va_list args;
  va_start(args, op);
  const int value = va_arg(args, int);
  int* result = va_arg(args, int*);
  va_end(args);
  return sqlite3_api->db_config(db, op, value, result);
}

char* sqlite3_mprintf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  char* text = sqlite3_api->vmprintf(format, args);
  va_end(args);
  return text;
}

// The rest forward as they are.
#define SLUICE_FORWARD(result, name, params, args) \
  result sqlite3_##name params { return sqlite3_api->name args; }

SLUICE_FORWARD(sqlite3_backup*, backup_init,
               (sqlite3 * to, const char* to_name, sqlite3* from, const char* from_name),
               (to, to_name, from, from_name))
SLUICE_FORWARD(int, backup_step, (sqlite3_backup * b, int pages), (b, pages))
SLUICE_FORWARD(int, backup_finish, (sqlite3_backup * b), (b))
SLUICE_FORWARD(int, backup_remaining, (sqlite3_backup * b), (b))
SLUICE_FORWARD(int, backup_pagecount, (sqlite3_backup * b), (b))
SLUICE_FORWARD(int, bind_blob, (sqlite3_stmt * s, int i, const void* v, int n, void (*d)(void*)),
               (s, i, v, n, d))
SLUICE_FORWARD(int, bind_double, (sqlite3_stmt * s, int i, double v), (s, i, v))
SLUICE_FORWARD(int, bind_int, (sqlite3_stmt * s, int i, int v), (s, i, v))
SLUICE_FORWARD(int, bind_int64, (sqlite3_stmt * s, int i, sqlite3_int64 v), (s, i, v))
SLUICE_FORWARD(int, bind_null, (sqlite3_stmt * s, int i), (s, i))
SLUICE_FORWARD(int, bind_parameter_count, (sqlite3_stmt * s), (s))
SLUICE_FORWARD(int, bind_parameter_index, (sqlite3_stmt * s, const char* n), (s, n))
SLUICE_FORWARD(int, bind_text, (sqlite3_stmt * s, int i, const char* v, int n, void (*d)(void*)),
               (s, i, v, n, d))
SLUICE_FORWARD(int, busy_handler, (sqlite3 * db, int (*f)(void*, int), void* a), (db, f, a))
SLUICE_FORWARD(int, busy_timeout, (sqlite3 * db, int ms), (db, ms))
SLUICE_FORWARD(int, changes, (sqlite3 * db), (db))
SLUICE_FORWARD(int, clear_bindings, (sqlite3_stmt * s), (s))
SLUICE_FORWARD(const void*, column_blob, (sqlite3_stmt * s, int i), (s, i))
SLUICE_FORWARD(int, column_bytes, (sqlite3_stmt * s, int i), (s, i))
SLUICE_FORWARD(int, column_count, (sqlite3_stmt * s), (s))
SLUICE_FORWARD(const char*, column_decltype, (sqlite3_stmt * s, int i), (s, i))
SLUICE_FORWARD(double, column_double, (sqlite3_stmt * s, int i), (s, i))
SLUICE_FORWARD(int, column_int, (sqlite3_stmt * s, int i), (s, i))
SLUICE_FORWARD(sqlite3_int64, column_int64, (sqlite3_stmt * s, int i), (s, i))
SLUICE_FORWARD(const char*, column_name, (sqlite3_stmt * s, int i), (s, i))
SLUICE_FORWARD(const char*, column_origin_name, (sqlite3_stmt * s, int i), (s, i))
SLUICE_FORWARD(const unsigned char*, column_text, (sqlite3_stmt * s, int i), (s, i))
SLUICE_FORWARD(int, column_type, (sqlite3_stmt * s, int i), (s, i))
SLUICE_FORWARD(sqlite3*, context_db_handle, (sqlite3_context * c), (c))
SLUICE_FORWARD(int, create_function_v2,
               (sqlite3 * db, const char* name, int args, int flags, void* data,
                void (*f)(sqlite3_context*, int, sqlite3_value**),
                void (*step)(sqlite3_context*, int, sqlite3_value**),
                void (*final)(sqlite3_context*), void (*destroy)(void*)),
               (db, name, args, flags, data, f, step, final, destroy))
SLUICE_FORWARD(int, create_module_v2,
               (sqlite3 * db, const char* name, const sqlite3_module* m, void* data,
                void (*destroy)(void*)),
               (db, name, m, data, destroy))
SLUICE_FORWARD(const char*, db_filename, (sqlite3 * db, const char* name), (db, name))
SLUICE_FORWARD(int, declare_vtab, (sqlite3 * db, const char* sql), (db, sql))
SLUICE_FORWARD(int, errcode, (sqlite3 * db), (db))
SLUICE_FORWARD(const char*, errmsg, (sqlite3 * db), (db))
SLUICE_FORWARD(const char*, errstr, (int code), (code))
SLUICE_FORWARD(int, exec,
               (sqlite3 * db, const char* sql, int (*f)(void*, int, char**, char**), void* a,
                char** error),
               (db, sql, f, a, error))
SLUICE_FORWARD(char*, expanded_sql, (sqlite3_stmt * s), (s))
SLUICE_FORWARD(int, extended_errcode, (sqlite3 * db), (db))
SLUICE_FORWARD(int, file_control, (sqlite3 * db, const char* name, int op, void* arg),
               (db, name, op, arg))
SLUICE_FORWARD(int, finalize, (sqlite3_stmt * s), (s))
SLUICE_FORWARD(void, free, (void* p), (p))
SLUICE_FORWARD(int, get_autocommit, (sqlite3 * db), (db))
SLUICE_FORWARD(sqlite3_int64, last_insert_rowid, (sqlite3 * db), (db))
SLUICE_FORWARD(const char*, libversion, (void), ())
SLUICE_FORWARD(int, libversion_number, (void), ())
SLUICE_FORWARD(int, load_extension, (sqlite3 * db, const char* file, const char* proc, char** e),
               (db, file, proc, e))
SLUICE_FORWARD(sqlite3_stmt*, next_stmt, (sqlite3 * db, sqlite3_stmt* s), (db, s))
SLUICE_FORWARD(int, prepare_v2,
               (sqlite3 * db, const char* sql, int n, sqlite3_stmt** s, const char** tail),
               (db, sql, n, s, tail))
SLUICE_FORWARD(int, reset, (sqlite3_stmt * s), (s))
SLUICE_FORWARD(void, result_error, (sqlite3_context * c, const char* text, int n), (c, text, n))
SLUICE_FORWARD(void, result_int64, (sqlite3_context * c, sqlite3_int64 v), (c, v))
SLUICE_FORWARD(void, result_null, (sqlite3_context * c), (c))
SLUICE_FORWARD(void, result_text, (sqlite3_context * c, const char* v, int n, void (*d)(void*)),
               (c, v, n, d))
SLUICE_FORWARD(int, set_authorizer,
               (sqlite3 * db,
                int (*f)(void*, int, const char*, const char*, const char*, const char*), void* a),
               (db, f, a))
SLUICE_FORWARD(int, step, (sqlite3_stmt * s), (s))
SLUICE_FORWARD(int, stmt_busy, (sqlite3_stmt * s), (s))
SLUICE_FORWARD(int, stmt_readonly, (sqlite3_stmt * s), (s))
SLUICE_FORWARD(int, total_changes, (sqlite3 * db), (db))
SLUICE_FORWARD(void*, user_data, (sqlite3_context * c), (c))
SLUICE_FORWARD(int, value_bytes, (sqlite3_value * v), (v))
SLUICE_FORWARD(int, value_int, (sqlite3_value * v), (v))
SLUICE_FORWARD(sqlite3_int64, value_int64, (sqlite3_value * v), (v))
SLUICE_FORWARD(const unsigned char*, value_text, (sqlite3_value * v), (v))
SLUICE_FORWARD(int, value_type, (sqlite3_value * v), (v))
SLUICE_FORWARD(void*, wal_hook,
               (sqlite3 * db, int (*f)(void*, sqlite3*, const char*, int), void* a), (db, f, a))
SLUICE_FORWARD(int, wal_checkpoint_v2,
               (sqlite3 * db, const char* name, int mode, int* log, int* done),
               (db, name, mode, log, done))

#undef SLUICE_FORWARD

}  // extern "C"
