// Thin RAII over the sqlite3 C API, for the floor: the code a careful hand-writer would use,
// with no layer of its own between the caller and SQLite.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace bench {

// Not thread-safe: one connection, used by one thread.
class RawConnection {
 public:
  explicit RawConnection(const std::string& path);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  // Runs one or more statements that return no rows the caller needs.
  void exec(const std::string& sql);
  sqlite3* handle() const { return db_; }

 private:
  sqlite3* db_ = nullptr;
};

// Not thread-safe. A statement prepared once and reset for every use, as hand-written code
// reuses it.
class RawStatement {
 public:
  RawStatement(RawConnection& connection, const std::string& sql);
  ~RawStatement();
  RawStatement(const RawStatement&) = delete;
  RawStatement& operator=(const RawStatement&) = delete;

  void bind(int index, std::int64_t value);
  // The text must outlive the statement's next reset: SQLite does not copy it.
  void bind(int index, std::string_view text);
  void bind_null(int index);
  // True while a row is available.
  bool step();
  // Steps a statement that returns no row, then resets it.
  void run();
  void reset();

  std::int64_t column_int(int index) const;
  std::string_view column_text(int index) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* statement_ = nullptr;
};

}  // namespace bench
