// Counts the write transactions a connection begins, through sqlite3_trace_v2: every sluice write
// transaction starts with a BEGIN IMMEDIATE statement on the connection.
#pragma once

#include <SQLiteCpp/Database.h>

namespace sluice::model {

// Not thread-safe: counts on the thread that uses the connection. Must not outlive `db`; installs
// the connection's only trace callback and removes it on destruction.
class WriteCounter {
 public:
  explicit WriteCounter(SQLite::Database& db);
  ~WriteCounter();
  WriteCounter(const WriteCounter&) = delete;
  WriteCounter& operator=(const WriteCounter&) = delete;

  long long begins() const { return begins_; }

 private:
  static int on_statement(unsigned type, void* self, void* statement, void* sql);

  SQLite::Database& db_;
  long long begins_ = 0;
};

}  // namespace sluice::model
