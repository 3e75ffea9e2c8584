// Records the SQL text of every statement a connection runs, through sqlite3_trace_v2: how the
// query-plan tests find the statements sluice really runs, to EXPLAIN them.
#pragma once

#include <SQLiteCpp/Database.h>
#include <sqlite3.h>

#include <set>
#include <string>
#include <utility>

namespace sluice::test {

// Not thread-safe: records on the thread that uses `db`. Removes its trace on destruction.
class StatementRecorder {
 public:
  explicit StatementRecorder(SQLite::Database& db) : db_(db.getHandle()) {
    sqlite3_trace_v2(db_, SQLITE_TRACE_STMT, &on_statement, this);
  }
  ~StatementRecorder() { sqlite3_trace_v2(db_, 0, nullptr, nullptr); }
  StatementRecorder(const StatementRecorder&) = delete;
  StatementRecorder& operator=(const StatementRecorder&) = delete;

  // Every statement recorded so far.
  const std::set<std::string>& statements() const { return statements_; }
  // The statements recorded since the last call.
  std::set<std::string> take() { return std::exchange(statements_, {}); }

 private:
  static int on_statement(unsigned, void* self, void* statement, void*) {
    const char* sql = sqlite3_sql(static_cast<sqlite3_stmt*>(statement));
    if (sql != nullptr) static_cast<StatementRecorder*>(self)->statements_.insert(sql);
    return 0;
  }

  sqlite3* db_;
  std::set<std::string> statements_;
};

}  // namespace sluice::test
