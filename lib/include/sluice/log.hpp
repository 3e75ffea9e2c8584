// Structured logging. sluice is silent unless Options::log is set.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>

namespace sluice {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

// Named values attached to a log record: event_id, consumer, topic, attempt, error, lag_ms...
using LogFields = std::map<std::string, std::string>;

// Receives sluice's log records. Implementations must be thread-safe: workers log from their
// own threads.
class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void write(LogLevel level, const std::string& message, const LogFields& fields) = 0;
};

// Thread-safe. Writes one JSON object per line: {"ts":RFC 3339,"level":..,"msg":..,fields...}.
class JsonLinesSink final : public LogSink {
 public:
  // `out` must outlive the sink.
  explicit JsonLinesSink(std::ostream& out, LogLevel min_level = LogLevel::kInfo);
  void write(LogLevel level, const std::string& message, const LogFields& fields) override;

 private:
  std::ostream& out_;
  LogLevel min_level_;
  std::mutex mutex_;
};

const char* to_string(LogLevel level);

}  // namespace sluice
