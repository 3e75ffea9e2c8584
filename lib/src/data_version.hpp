// PRAGMA data_version on one connection: how a connection learns that another one committed.
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

namespace sluice {

// Not thread-safe: used by its connection's thread.
class DataVersion {
 public:
  explicit DataVersion(SQLite::Database& db) : query_(db, "PRAGMA data_version") {}

  // A value that differs from an earlier reading if another connection committed to the file in
  // between (this connection's own commits leave it unchanged).
  long long read() {
    query_.reset();
    query_.executeStep();
    const long long version = query_.getColumn(0).getInt64();
    query_.reset();
    return version;
  }

 private:
  SQLite::Statement query_;
};

}  // namespace sluice
