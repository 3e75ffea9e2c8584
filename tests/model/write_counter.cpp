#include "write_counter.hpp"

#include <sqlite3.h>
#include <strings.h>

namespace sluice::model {

WriteCounter::WriteCounter(SQLite::Database& db) : db_(db) {
  sqlite3_trace_v2(db_.getHandle(), SQLITE_TRACE_STMT, &WriteCounter::on_statement, this);
}

WriteCounter::~WriteCounter() { sqlite3_trace_v2(db_.getHandle(), 0, nullptr, nullptr); }

int WriteCounter::on_statement(unsigned type, void* self, void* /*statement*/, void* sql) {
  // The unexpanded text of a statement; a trigger's sub-statements start with "--".
  const char* text = static_cast<const char*>(sql);
  // A plain BEGIN is a read transaction (a round's look at its consumers), not counted.
  if (type == SQLITE_TRACE_STMT && text != nullptr &&
      (strncasecmp(text, "BEGIN IMMEDIATE", 15) == 0 ||
       strncasecmp(text, "BEGIN EXCLUSIVE", 15) == 0))
    ++static_cast<WriteCounter*>(self)->begins_;
  return 0;
}

}  // namespace sluice::model
