// A WHERE clause assembled from optional conditions, with its bound values kept beside it.
#pragma once

#include <SQLiteCpp/Statement.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace sluice {

// Not thread-safe: a value built and used in one call.
class SqlFilter {
 public:
  using Value = std::variant<std::int64_t, std::string>;

  // Adds "AND (condition)"; each '?' in `condition` takes the next of `values`.
  SqlFilter& where(const std::string& condition, std::vector<Value> values = {}) {
    clause_ += " AND (" + condition + ")";
    for (auto& value : values) values_.push_back(std::move(value));
    return *this;
  }

  // Adds "AND column IN (?, ?, ...)" for `items`; nothing when `items` is empty.
  SqlFilter& where_in(const std::string& column, const std::vector<std::string>& items) {
    if (items.empty()) return *this;
    std::string marks;
    for (const auto& item : items) {
      marks += marks.empty() ? "?" : ", ?";
      values_.emplace_back(item);
    }
    clause_ += " AND " + column + " IN (" + marks + ")";
    return *this;
  }

  // " AND ..." conditions, to follow a "WHERE 1".
  const std::string& clause() const { return clause_; }

  // Binds the values to `statement` starting at parameter `first`; returns the next index.
  int bind(SQLite::Statement& statement, int first = 1) const {
    int index = first;
    for (const auto& value : values_) {
      if (const auto* number = std::get_if<std::int64_t>(&value)) {
        statement.bind(index++, static_cast<int64_t>(*number));
      } else {
        statement.bind(index++, std::get<std::string>(value));
      }
    }
    return index;
  }

 private:
  std::string clause_;
  std::vector<Value> values_;
};

}  // namespace sluice
