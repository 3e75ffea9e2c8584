#include "format.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <optional>

#include "sluice/options.hpp"
#include "usage_error.hpp"

namespace sluice::cli {
namespace {

using std::chrono::days;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

struct Unit {
  const char* suffix;
  milliseconds length;
};

// Largest first, the order format_duration prints them in.
constexpr std::array<Unit, 5> kUnits{{{"d", days(1)},
                                      {"h", hours(1)},
                                      {"m", minutes(1)},
                                      {"s", seconds(1)},
                                      {"ms", milliseconds(1)}}};

// Past the longest duration in any unit: a count is held at this while its digits are read.
constexpr long long kMaxCount = Options::kLongestDuration.count() + 1;

[[noreturn]] void bad_time(const std::string& text) {
  throw UsageError("invalid time '" + text +
                   "': expected RFC 3339 like 2026-11-29T10:30:00Z or a duration ago like 2h");
}

// Reads exactly `width` digits at `pos`, advancing it.
int read_digits(const std::string& text, std::size_t& pos, int width) {
  int value = 0;
  for (int i = 0; i < width; ++i, ++pos) {
    if (pos >= text.size() || !std::isdigit(static_cast<unsigned char>(text[pos]))) bad_time(text);
    value = value * 10 + (text[pos] - '0');
  }
  return value;
}

void expect_char(const std::string& text, std::size_t& pos, const std::string& allowed) {
  if (pos >= text.size() || allowed.find(text[pos]) == std::string::npos) bad_time(text);
  ++pos;
}

// The duration `text` spells, or nothing if it spells none. Throws UsageError naming the text
// if it is longer than Options::kLongestDuration in all.
std::optional<Duration> read_duration(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const auto too_long = [&text]() {
    return UsageError("invalid duration '" + text + "': at most " +
                      format_duration(Options::kLongestDuration));
  };
  Duration total{0};
  std::size_t pos = 0;
  while (pos < text.size()) {
    long long count = 0;
    const std::size_t digits_start = pos;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      // Held just past the limit, so more digits cannot overflow it.
      count = std::min(count * 10 + (text[pos++] - '0'), kMaxCount);
    }
    if (pos == digits_start) return std::nullopt;
    // The longest suffix wins, so "5ms" is milliseconds and not minutes followed by junk.
    const Unit* matched = nullptr;
    std::size_t matched_length = 0;
    for (const Unit& unit : kUnits) {
      const std::size_t length = std::char_traits<char>::length(unit.suffix);
      if (length > matched_length && text.compare(pos, length, unit.suffix) == 0) {
        matched = &unit;
        matched_length = length;
      }
    }
    if (matched == nullptr) return std::nullopt;
    pos += matched_length;
    // Compared before multiplying: each part may be in range and their sum not.
    if (count > (Options::kLongestDuration - total) / matched->length) throw too_long();
    total += matched->length * count;
  }
  return total;
}

}  // namespace

std::string format_time(TimePoint t) {
  // RFC 3339 has four-digit years; past them (a snooze of Duration::max()) the date would wrap.
  constexpr TimePoint kFirst{std::chrono::sys_days(std::chrono::year(0) / 1 / 1)};
  constexpr TimePoint kLast{std::chrono::sys_days(std::chrono::year(10000) / 1 / 1) -
                            milliseconds(1)};
  t = std::clamp(t, kFirst, kLast);
  const auto day = std::chrono::floor<days>(t);
  const std::chrono::year_month_day date{day};
  const std::chrono::hh_mm_ss<milliseconds> time{t - day};
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ",
                static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                static_cast<unsigned>(date.day()), static_cast<int>(time.hours().count()),
                static_cast<int>(time.minutes().count()), static_cast<int>(time.seconds().count()),
                static_cast<int>(time.subseconds().count()));
  return buffer;
}

TimePoint parse_time(const std::string& text) {
  std::size_t pos = 0;
  const int year = read_digits(text, pos, 4);
  expect_char(text, pos, "-");
  const int month = read_digits(text, pos, 2);
  expect_char(text, pos, "-");
  const int day = read_digits(text, pos, 2);
  expect_char(text, pos, "Tt ");
  const int hour = read_digits(text, pos, 2);
  expect_char(text, pos, ":");
  const int minute = read_digits(text, pos, 2);
  expect_char(text, pos, ":");
  const int second = read_digits(text, pos, 2);
  long long millis = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      if (digits < 3) millis = millis * 10 + (text[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) bad_time(text);
    for (; digits < 3; ++digits) millis *= 10;
  }
  minutes offset{0};
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int sign = text[pos] == '-' ? -1 : 1;
    ++pos;
    const int offset_hours = read_digits(text, pos, 2);
    expect_char(text, pos, ":");
    const int offset_minutes = read_digits(text, pos, 2);
    if (offset_hours > 23 || offset_minutes > 59) bad_time(text);
    offset = minutes(sign * (offset_hours * 60 + offset_minutes));
  } else {
    bad_time(text);
  }
  if (pos != text.size()) bad_time(text);
  const std::chrono::year_month_day date{std::chrono::year(year),
                                         std::chrono::month(static_cast<unsigned>(month)),
                                         std::chrono::day(static_cast<unsigned>(day))};
  if (!date.ok() || hour > 23 || minute > 59 || second > 60) bad_time(text);
  const auto local = std::chrono::sys_days(date) + hours(hour) + minutes(minute) + seconds(second) +
                     milliseconds(millis);
  return std::chrono::time_point_cast<milliseconds>(local - offset);
}

std::string format_duration(Duration d) {
  if (d.count() < 0) return "-" + format_duration(-d);
  if (d.count() == 0) return "0s";
  if (d < seconds(1)) return std::to_string(d.count()) + "ms";
  if (d < minutes(1)) {
    // Tenths of a second read as a duration ("26.8s"); "26s813ms" reads as two numbers.
    const long long tenths = d.count() / 100;
    return std::to_string(tenths / 10) +
           (tenths % 10 == 0 ? "" : "." + std::to_string(tenths % 10)) + "s";
  }
  std::string text;
  int parts = 0;
  for (const Unit& unit : kUnits) {
    if (parts == 2 || unit.length < seconds(1)) break;
    const long long count = d / unit.length;
    if (count > 0) {
      text += std::to_string(count) + unit.suffix;
      d -= unit.length * count;
      ++parts;
    } else if (parts > 0) {
      break;  // "1h0m5s" would mislead; "1h" after rounding down reads better.
    }
  }
  return text;
}

Duration parse_duration(const std::string& text) {
  if (const auto duration = read_duration(text)) return *duration;
  throw UsageError("invalid duration '" + text +
                   "': expected a number and a unit (ms, s, m, h, d), like 30s, 15m, 12h or 7d");
}

TimePoint parse_time_or_ago(const std::string& text, TimePoint now) {
  const bool looks_like_date = text.size() >= 10 && text[4] == '-';
  if (looks_like_date) return parse_time(text);
  if (const auto ago = read_duration(text)) return now - *ago;
  bad_time(text);
}

}  // namespace sluice::cli
