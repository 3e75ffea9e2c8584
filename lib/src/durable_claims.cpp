#include "durable_claims.hpp"

#include <sqlite3.h>

#include <string>

#include "rewind.hpp"

namespace sluice {
namespace {

constexpr int kFull = 2;  // PRAGMA synchronous: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA

bool on_file(SQLite::Database& db) {
  const char* file = sqlite3_db_filename(db.getHandle(), "main");
  return file != nullptr && *file != '\0';
}

}  // namespace

DurableClaims::DurableClaims(SQLite::Database& db)
    : db_(db),
      on_file_(on_file(db)),
      read_level_(db, "PRAGMA synchronous"),
      full_(db, "PRAGMA synchronous = FULL") {}

DurableClaims::Scope DurableClaims::scope() {
  Scope scope(nullptr);
  if (!on_file_) return scope;
  // Read each time: an app may change the level of a connection it lent the worker.
  rewind(read_level_);
  const int level = read_level_.executeStep() ? read_level_.getColumn(0).getInt() : kFull;
  rewind(read_level_);
  if (level >= kFull) return scope;
  rewind(full_);
  full_.exec();
  rewind(full_);
  scope.owner_ = this;
  scope.level_ = level;
  return scope;
}

DurableClaims::Scope::~Scope() {
  if (owner_ == nullptr) return;
  // A pragma that only sets a connection flag does not fail short of a misuse; should it, the
  // connection stays at FULL, slower and no less safe.
  sqlite3_exec(owner_->db_.getHandle(), ("PRAGMA synchronous = " + std::to_string(level_)).c_str(),
               nullptr, nullptr, nullptr);
}

}  // namespace sluice
