#include "connection_clock.hpp"

#include <sqlite3.h>

#include <mutex>
#include <unordered_map>

#include "sqlite_error.hpp"

namespace sluice {
namespace {

// SQLite has no hook on close, but it destroys a connection's SQL functions when it closes: the
// entry of a connection lives as long as a function registered on it, so a later connection at
// the same address never inherits it.
constexpr const char* kMarker = "sluice_connection_clock";

std::mutex registry_mutex;

std::unordered_map<sqlite3*, std::shared_ptr<Clock>>& registry() {
  // Never destroyed: a connection may close during static destruction.
  static auto* clocks = new std::unordered_map<sqlite3*, std::shared_ptr<Clock>>();
  return *clocks;
}

void forget(void* handle) {
  std::lock_guard lock(registry_mutex);
  registry().erase(static_cast<sqlite3*>(handle));
}

void marker(sqlite3_context* context, int, sqlite3_value**) { sqlite3_result_null(context); }

}  // namespace

void remember_clock(SQLite::Database& db, std::shared_ptr<Clock> clock) {
  sqlite3* handle = db.getHandle();
  // Registering again destroys the previous registration first, which forgets the old entry.
  const int rc = sqlite3_create_function_v2(handle, kMarker, 0, SQLITE_UTF8, handle, marker,
                                            nullptr, nullptr, forget);
  if (rc != SQLITE_OK) {
    throw_database_error("remember clock", SQLite::Exception(handle, rc));
  }
  std::lock_guard lock(registry_mutex);
  if (clock) registry()[handle] = std::move(clock);
}

std::shared_ptr<Clock> clock_for(SQLite::Database& db, const Options& options) {
  if (options.clock) return options.clock;
  std::lock_guard lock(registry_mutex);
  const auto found = registry().find(db.getHandle());
  return found != registry().end() ? found->second : system_clock();
}

}  // namespace sluice
