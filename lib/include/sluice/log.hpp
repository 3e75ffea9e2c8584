// Structured logging. sluice is silent unless Options::log is set.
#pragma once

#include <concepts>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace sluice {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

// One field's value: text, or a whole number (attempt, lag_ms, events...) that a structured
// sink writes as a number, so a log pipeline can compare and sum it without parsing.
class LogValue {
 public:
  LogValue() = default;
  LogValue(std::string text) : text_(std::move(text)) {}
  LogValue(const char* text) : text_(text) {}
  template <std::integral Number>
  requires(!std::same_as<Number, bool> && !std::same_as<Number, char>) LogValue(Number number)
      : text_(std::to_string(number)), number_(true) {}

  // The value as text; a number in decimal.
  const std::string& text() const { return text_; }
  bool is_number() const { return number_; }

  friend bool operator==(const LogValue& value, std::string_view text) {
    return value.text_ == text;
  }

 private:
  std::string text_;
  bool number_ = false;
};

// Named values attached to a log record: event_id, consumer, topic, attempt, error, lag_ms...
using LogFields = std::map<std::string, LogValue>;

// Receives sluice's log records. Implementations must be thread-safe: workers log from their
// own threads.
class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void write(LogLevel level, const std::string& message, const LogFields& fields) = 0;
};

// Thread-safe. Writes one JSON object per line: {"ts":RFC 3339,"level":..,"msg":..,fields...},
// numbers as JSON numbers ("attempt":1, "lag_ms":9) and text as strings.
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
