// Counts the statements a connection runs, by their leading words, through sqlite3_trace_v2: how
// tests see write transactions (BEGIN IMMEDIATE) the engine makes when it should make none.
#pragma once

#include <SQLiteCpp/Database.h>
#include <sqlite3.h>

#include <string>

namespace sluice::test {

// Not thread-safe: counts on the thread that uses `db`. Removes its trace on destruction.
class StatementCounter {
 public:
  // Counts statements whose text starts with `prefix` (e.g. "BEGIN IMMEDIATE", "UPDATE").
  StatementCounter(SQLite::Database& db, std::string prefix) : db_(db), prefix_(std::move(prefix)) {
    sqlite3_trace_v2(db_.getHandle(), SQLITE_TRACE_STMT, &StatementCounter::on_statement, this);
  }
  ~StatementCounter() { sqlite3_trace_v2(db_.getHandle(), 0, nullptr, nullptr); }
  StatementCounter(const StatementCounter&) = delete;
  StatementCounter& operator=(const StatementCounter&) = delete;

  long long count() const { return count_; }

 private:
  static int on_statement(unsigned, void* self, void* statement, void*) {
    auto& counter = *static_cast<StatementCounter*>(self);
    const char* sql = sqlite3_sql(static_cast<sqlite3_stmt*>(statement));
    if (sql != nullptr && std::string(sql).rfind(counter.prefix_, 0) == 0) ++counter.count_;
    return 0;
  }

  SQLite::Database& db_;
  std::string prefix_;
  long long count_ = 0;
};

}  // namespace sluice::test
