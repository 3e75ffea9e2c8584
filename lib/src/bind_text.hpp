// Binding optional text to a prepared statement.
#pragma once

#include <SQLiteCpp/Statement.h>

#include <string>

namespace sluice {

// Binds `value` without copying it, or NULL when it is empty (an event without a key, a failure
// without an error). `value` must outlive the statement's next run.
inline void bind_text_or_null(SQLite::Statement& statement, int index, const std::string& value) {
  if (value.empty()) {
    statement.bind(index);
  } else {
    statement.bindNoCopy(index, value);
  }
}

}  // namespace sluice
