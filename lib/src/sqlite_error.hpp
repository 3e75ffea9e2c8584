// Turning SQLite's exceptions into sluice's, in one place.
#pragma once

#include <SQLiteCpp/Exception.h>

#include <string>
#include <utility>

#include "sluice/error.hpp"

namespace sluice {

// Throws the sluice::DatabaseError subclass matching `e`'s code, naming `operation`.
[[noreturn]] void throw_database_error(const char* operation, const SQLite::Exception& e);

// Runs `body`; SQLite exceptions leave as sluice errors naming `operation`.
template <class Body>
auto guarded(const char* operation, Body&& body) -> decltype(body()) {
  try {
    return std::forward<Body>(body)();
  } catch (const SQLite::Exception& e) {
    throw_database_error(operation, e);
  }
}

}  // namespace sluice
