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
  void write(LogLevel level, const std::string& message, const LogFields&) override {
    std::lock_guard lock(mutex_);
    records_.emplace_back(level, message);
  }
  // Records of `level` so far.
  int count(LogLevel level) {
    std::lock_guard lock(mutex_);
    int n = 0;
    for (const auto& record : records_) n += record.first == level;
    return n;
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<LogLevel, std::string>> records_;
};

}  // namespace sluice::testing
