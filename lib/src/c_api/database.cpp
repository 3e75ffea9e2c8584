// sluice_db: a connection opened for sluice, and sluice's settings on the app's own connections.
#include "sluice/database.hpp"

#include <SQLiteCpp/Database.h>

#include <memory>
#include <utility>

#include "borrowed_connection.hpp"
#include "database_handle.hpp"
#include "result_codes.hpp"
#include "sluice/error.hpp"
#include "sluice/sluice.h"

using sluice::c_api::require;
using sluice::c_api::run;

extern "C" {

int sluice_open(const char* path, int mode, sluice_db** db, char** errmsg) {
  return run(errmsg, [&] {
    require(path, "sluice_open: path is NULL");
    require(db, "sluice_open: db (the out parameter) is NULL");
    sluice::OpenMode open_mode;
    switch (mode) {
      case SLUICE_OPEN_CREATE:
        open_mode = sluice::OpenMode::kCreate;
        break;
      case SLUICE_OPEN_EXISTING:
        open_mode = sluice::OpenMode::kExisting;
        break;
      case SLUICE_OPEN_READONLY:
        open_mode = sluice::OpenMode::kReadOnly;
        break;
      default:
        throw sluice::InvalidArgument(
            "sluice_open: mode " + std::to_string(mode) +
            " is none of SLUICE_OPEN_CREATE, SLUICE_OPEN_EXISTING, SLUICE_OPEN_READONLY");
    }
    auto opened = std::make_unique<sluice_db>(sluice::open_database(path, {}, open_mode));
    *db = opened.release();
  });
}

void sluice_close(sluice_db* db) { delete db; }

sqlite3* sluice_db_handle(sluice_db* db) { return db != nullptr ? db->db.getHandle() : nullptr; }

int sluice_configure(sqlite3* conn, char** errmsg) {
  return run(errmsg, [&] {
    require(conn, "sluice_configure: conn is NULL");
    sluice::configure_connection(sluice::c_api::borrowed_database(conn));
  });
}

}  // extern "C"
