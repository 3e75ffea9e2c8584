// The entry point SQLite looks up when the host loads the extension (".load sluice" finds
// sqlite3_sluice_init from the file name). The one file that sees sqlite3ext.h's macros: every
// other file calls sqlite3_* by name, which sqlite_api.cpp forwards to the table set here.
#include <sqlite3ext.h>

#include <string>

#include "sql_functions.hpp"

SQLITE_EXTENSION_INIT1

extern "C" __attribute__((visibility("default"))) int sqlite3_sluice_init(
    sqlite3* db, char** error, const sqlite3_api_routines* api) {
  SQLITE_EXTENSION_INIT2(api);
  std::string message;
  const int rc = sluice::sqlext::register_functions(db, message);
  if (rc != SQLITE_OK && error != nullptr) *error = sqlite3_mprintf("%s", message.c_str());
  return rc;
}
