#include "durable_claims.hpp"

#include <sqlite3.h>

#include <string>

namespace sluice {
namespace {

constexpr int kFull = 2;  // PRAGMA synchronous: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA

bool on_file(SQLite::Database& db) {
  const char* file = sqlite3_db_filename(db.getHandle(), "main");
  return file != nullptr && *file != '\0';
}

}  // namespace

DurableClaims::DurableClaims(SQLite::Database& db) : db_(db), on_file_(on_file(db)) {}

namespace {

// PRAGMA synchronous acts, and reads, when it is prepared, not when it is stepped: a statement
// kept prepared would have set the level once (on its preparation) and then read it stale. So
// each is prepared anew and run at once.
int synchronous_level(SQLite::Database& db) { return db.execAndGet("PRAGMA synchronous").getInt(); }

void set_synchronous_level(SQLite::Database& db, int level) {
  sqlite3_exec(db.getHandle(), ("PRAGMA synchronous = " + std::to_string(level)).c_str(), nullptr,
               nullptr, nullptr);
}

}  // namespace

DurableClaims::Scope DurableClaims::scope() {
  Scope scope(nullptr);
  if (!on_file_) return scope;
  // Read each time: an app may change the level of a connection it lent the worker.
  const int level = synchronous_level(db_);
  if (level >= kFull) return scope;
  set_synchronous_level(db_, kFull);
  scope.owner_ = this;
  scope.level_ = level;
  return scope;
}

DurableClaims::Scope::~Scope() {
  if (owner_ == nullptr) return;
  // A pragma that only sets a connection flag does not fail short of a misuse; should it, the
  // connection stays at FULL, slower and no less safe.
  set_synchronous_level(owner_->db_, level_);
}

}  // namespace sluice
