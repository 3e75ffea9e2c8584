#include "sluice/log.hpp"

#include <nlohmann/json.hpp>

#include "time_format.hpp"

namespace sluice {

const char* to_string(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "unknown";
}

JsonLinesSink::JsonLinesSink(std::ostream& out, LogLevel min_level)
    : out_(out), min_level_(min_level) {}

void JsonLinesSink::write(LogLevel level, const std::string& message, const LogFields& fields) {
  if (level < min_level_) return;
  nlohmann::json record;
  record["ts"] =
      format_rfc3339(std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now()));
  record["level"] = to_string(level);
  record["msg"] = message;
  for (const auto& [name, value] : fields) {
    if (value.is_number()) {
      // Held as text that std::to_string wrote: a signed or unsigned 64-bit integer.
      record[name] = value.text().front() == '-' ? nlohmann::json(std::stoll(value.text()))
                                                 : nlohmann::json(std::stoull(value.text()));
    } else {
      record[name] = value.text();
    }
  }
  const std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::lock_guard lock(mutex_);
  out_ << line << '\n';
  out_.flush();
}

}  // namespace sluice
