#include "sqlite_error.hpp"

#include <sqlite3.h>

namespace sluice {

void throw_database_error(const char* operation, const SQLite::Exception& e) {
  const int code = e.getExtendedErrorCode();
  // SQLite's message is often its code's text: say it once.
  const std::string message = e.what();
  const std::string what =
      "sluice: " + std::string(operation) + ": " + message + " (" +
      (message == sqlite3_errstr(code) ? "" : sqlite3_errstr(code) + std::string(", ")) + "code " +
      std::to_string(code) + ")";
  switch (code & 0xff) {
    case SQLITE_NOTADB:
      throw NotADatabaseError(what, code);
    case SQLITE_CORRUPT:
      throw CorruptDatabaseError(what, code);
    case SQLITE_FULL:
      throw StorageFullError(what, code);
    default:
      throw DatabaseError(what, code);
  }
}

}  // namespace sluice
