// Test support: a log sink that keeps the records, so tests can see what a component reported.
#pragma once

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "sluice/log.hpp"

namespace sluice::testing {

// Thread-safe.
class RecordingSink final : public LogSink {
 public:
  void write(LogLevel level, const std::string& message, const LogFields& fields) override {
    std::lock_guard lock(mutex_);
    records_.emplace_back(level, message);
    for (const auto& [name, value] : fields) field_texts_.push_back(value.text());
  }
  // Records of `level` so far.
  int count(LogLevel level) {
    std::lock_guard lock(mutex_);
    int n = 0;
    for (const auto& record : records_) n += record.first == level;
    return n;
  }
  // Whether some record's field value holds `text`.
  bool field_contains(const std::string& text) {
    std::lock_guard lock(mutex_);
    for (const auto& value : field_texts_)
      if (value.find(text) != std::string::npos) return true;
    return false;
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<LogLevel, std::string>> records_;
  std::vector<std::string> field_texts_;
};

}  // namespace sluice::testing
