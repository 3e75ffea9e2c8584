#include "time_format.hpp"

#include <cstdio>
#include <ctime>
#include <utility>

namespace sluice {

std::string format_rfc3339(TimePoint t) {
  const long long ms = t.time_since_epoch().count();
  long long seconds = ms / 1000;
  long long millis = ms % 1000;
  if (millis < 0) {
    millis += 1000;
    --seconds;
  }
  const std::time_t tt = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return buf;
}

std::string format_duration(Duration d) {
  const long long ms = d.count();
  for (const auto& [unit, length] : {std::pair{"d", 86'400'000LL}, std::pair{"h", 3'600'000LL},
                                     std::pair{"m", 60'000LL}, std::pair{"s", 1'000LL}}) {
    if (ms != 0 && ms % length == 0) return std::to_string(ms / length) + unit;
  }
  return std::to_string(ms) + "ms";
}

}  // namespace sluice
