#include "raw_sqlite.hpp"

#include <stdexcept>

namespace bench {
namespace {

[[noreturn]] void fail(sqlite3* db, const std::string& operation) {
  throw std::runtime_error("floor: " + operation + ": " + sqlite3_errmsg(db));
}

}  // namespace

RawConnection::RawConnection(const std::string& path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    std::string message = "open " + path + ": " + sqlite3_errmsg(db_);
    sqlite3_close(db_);
    throw std::runtime_error("floor: " + message);
  }
}

RawConnection::~RawConnection() { sqlite3_close(db_); }

void RawConnection::exec(const std::string& sql) {
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    fail(db_, "exec " + sql);
  }
}

RawStatement::RawStatement(RawConnection& connection, const std::string& sql)
    : db_(connection.handle()) {
  if (sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &statement_, nullptr) !=
      SQLITE_OK) {
    fail(db_, "prepare " + sql);
  }
}

RawStatement::~RawStatement() { sqlite3_finalize(statement_); }

void RawStatement::bind(int index, std::int64_t value) {
  if (sqlite3_bind_int64(statement_, index, value) != SQLITE_OK) fail(db_, "bind");
}

void RawStatement::bind(int index, std::string_view text) {
  if (sqlite3_bind_text(statement_, index, text.data(), static_cast<int>(text.size()),
                        SQLITE_STATIC) != SQLITE_OK) {
    fail(db_, "bind");
  }
}

void RawStatement::bind_null(int index) {
  if (sqlite3_bind_null(statement_, index) != SQLITE_OK) fail(db_, "bind");
}

bool RawStatement::step() {
  int rc = sqlite3_step(statement_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  fail(db_, std::string("step ") + sqlite3_sql(statement_));
}

void RawStatement::run() {
  step();
  reset();
}

void RawStatement::reset() { sqlite3_reset(statement_); }

std::int64_t RawStatement::column_int(int index) const {
  return sqlite3_column_int64(statement_, index);
}

std::string_view RawStatement::column_text(int index) const {
  auto text = reinterpret_cast<const char*>(sqlite3_column_text(statement_, index));
  return {text ? text : "", static_cast<std::size_t>(sqlite3_column_bytes(statement_, index))};
}

}  // namespace bench
