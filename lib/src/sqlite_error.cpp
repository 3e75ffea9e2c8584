#include "sqlite_error.hpp"

#include <sqlite3.h>

namespace sluice {

void throw_database_error(const char* operation, const SQLite::Exception& e) {
  const int code = e.getExtendedErrorCode();
  const std::string what = std::string("sluice: ") + operation + ": " + e.what() + " (" +
                           sqlite3_errstr(code) + ", code " + std::to_string(code) + ")";
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
