#include "connection_cache.hpp"

#include <sqlite3.h>

#include <map>
#include <mutex>
#include <unordered_map>

#include "sqlite_error.hpp"

namespace sluice {
namespace {

constexpr const char* kModule = "sluice_connection_cache";

std::mutex cache_mutex;

// A connection's objects, by key.
using Cache = std::map<const void*, std::unique_ptr<ConnectionCached>>;

std::unordered_map<sqlite3*, Cache>& caches() {
  // Never destroyed: a connection may close during static destruction.
  static auto* all = new std::unordered_map<sqlite3*, Cache>();
  return *all;
}

// The module's one table: it has no rows; its connection to `db` lives until `db` closes.
struct CacheTable {
  sqlite3_vtab base{};
  sqlite3* db = nullptr;
};

int connect(sqlite3* db, void*, int, const char* const*, sqlite3_vtab** table, char**) {
  const int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(unused)");
  if (rc != SQLITE_OK) return rc;
  auto* made = new CacheTable();
  made->db = db;
  *table = &made->base;
  return SQLITE_OK;
}

// Called while the connection closes, before SQLite checks that no statement is left.
int disconnect(sqlite3_vtab* table) {
  auto* cache_table = reinterpret_cast<CacheTable*>(table);
  Cache dropped;
  {
    std::lock_guard lock(cache_mutex);
    const auto found = caches().find(cache_table->db);
    if (found != caches().end()) {
      dropped = std::move(found->second);
      caches().erase(found);
    }
  }
  delete cache_table;
  return SQLITE_OK;
}

int best_index(sqlite3_vtab*, sqlite3_index_info* info) {
  info->estimatedCost = 1;
  return SQLITE_OK;
}

int open_cursor(sqlite3_vtab*, sqlite3_vtab_cursor** cursor) {
  *cursor = new sqlite3_vtab_cursor();
  return SQLITE_OK;
}

int close_cursor(sqlite3_vtab_cursor* cursor) {
  delete cursor;
  return SQLITE_OK;
}

int filter(sqlite3_vtab_cursor*, int, const char*, int, sqlite3_value**) { return SQLITE_OK; }
int next(sqlite3_vtab_cursor*) { return SQLITE_OK; }
int eof(sqlite3_vtab_cursor*) { return 1; }
int column(sqlite3_vtab_cursor*, sqlite3_context*, int) { return SQLITE_OK; }
int rowid(sqlite3_vtab_cursor*, sqlite3_int64* id) {
  *id = 0;
  return SQLITE_OK;
}

// Eponymous only (no xCreate): the table exists on every connection the module is registered on.
const sqlite3_module kCacheModule = {
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

// Registers the module on `db` and connects its table, so that closing `db` disconnects it.
void watch_close(sqlite3* handle) {
  int rc = sqlite3_create_module_v2(handle, kModule, &kCacheModule, nullptr, nullptr);
  sqlite3_stmt* connect_table = nullptr;
  if (rc == SQLITE_OK) {
    rc = sqlite3_prepare_v2(handle, "SELECT 1 FROM sluice_connection_cache", -1, &connect_table,
                            nullptr);
  }
  if (rc == SQLITE_OK) {
    const int stepped = sqlite3_step(connect_table);
    rc = stepped == SQLITE_DONE ? SQLITE_OK : stepped;
  }
  sqlite3_finalize(connect_table);
  if (rc != SQLITE_OK) throw_database_error("cache statements", SQLite::Exception(handle, rc));
}

}  // namespace

ConnectionCached& connection_cached(
    sqlite3* handle, const void* key,
    const std::function<std::unique_ptr<ConnectionCached>()>& make) {
  bool watched = false;
  {
    std::lock_guard lock(cache_mutex);
    const auto found = caches().find(handle);
    if (found != caches().end()) {
      const auto object = found->second.find(key);
      if (object != found->second.end()) return *object->second;
      watched = true;
    }
  }
  std::unique_ptr<ConnectionCached> made = make();
  // First: an object kept without it would keep the connection from closing.
  if (!watched) watch_close(handle);
  ConnectionCached& kept = *made;
  std::lock_guard lock(cache_mutex);
  caches()[handle][key] = std::move(made);
  return kept;
}

ConnectionCached* find_connection_cached(sqlite3* handle, const void* key) {
  std::lock_guard lock(cache_mutex);
  const auto found = caches().find(handle);
  if (found == caches().end()) return nullptr;
  const auto object = found->second.find(key);
  return object != found->second.end() ? object->second.get() : nullptr;
}

ConnectionCached& connection_cached(
    SQLite::Database& db, const void* key,
    const std::function<std::unique_ptr<ConnectionCached>()>& make) {
  return connection_cached(db.getHandle(), key, make);
}

ConnectionCached* find_connection_cached(SQLite::Database& db, const void* key) {
  return find_connection_cached(db.getHandle(), key);
}

}  // namespace sluice
