// What a sluice_db handle holds.
#pragma once

#include <SQLiteCpp/Database.h>

#include <utility>

#include "sluice/sluice.h"

// A connection opened by sluice_open; used by one thread at a time, like the connection.
struct sluice_db {
  explicit sluice_db(SQLite::Database opened) : db(std::move(opened)) {}
  SQLite::Database db;
};
