#include "fingerprint.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <vector>

namespace sluice::cli {
namespace {

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

bool is_hex_digit(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), is_digit);
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Units of time as programs print them (Go's time.Duration prints 850ms and 1.5s, 1m30s): one
// wait in whatever unit is one <duration>.
bool is_duration_unit(std::string_view unit) {
  static constexpr std::array<std::string_view, 13> kUnits = {
      "ns", "us", "ms", "s", "m", "h", "d", "sec", "secs", "min", "mins", "hr", "hrs"};
  return std::find(kUnits.begin(), kUnits.end(), unit) != kUnits.end();
}

bool is_size_unit(std::string_view unit) {
  static constexpr std::array<std::string_view, 10> kUnits = {"b",  "kb",  "kib", "mb",  "mib",
                                                              "gb", "gib", "tb",  "tib", "pb"};
  return std::any_of(kUnits.begin(), kUnits.end(),
                     [unit](std::string_view u) { return equals_ignoring_case(u, unit); });
}

// A number with its unit, from `text`'s start: digits, an optional fraction (".5") and the
// letters right after them. Returns the length, 0 when `text` does not start with a digit.
std::size_t measure_quantity(std::string_view text, std::string_view& unit) {
  std::size_t end = 0;
  while (end < text.size() && is_digit(text[end])) ++end;
  if (end == 0) return 0;
  if (end + 1 < text.size() && text[end] == '.' && is_digit(text[end + 1])) {
    ++end;
    while (end < text.size() && is_digit(text[end])) ++end;
  }
  const std::size_t unit_start = end;
  while (end < text.size() && is_alpha(text[end])) ++end;
  unit = text.substr(unit_start, end - unit_start);
  return end;
}

// What the quantities at the start of `text` stand for, and their length: "1036ms" and "1m30s"
// are a <duration>, "10KiB" a <size>, "3.5" a <n>, "5xx" a <n> followed by its unit. Empty with
// length 0 when `text` starts with no digit.
std::pair<std::string, std::size_t> normalise_quantities(std::string_view text) {
  std::size_t length = 0;
  bool durations = true;
  int count = 0;
  std::string_view unit;
  std::string_view last_unit;
  while (const std::size_t n = measure_quantity(text.substr(length), unit)) {
    length += n;
    ++count;
    durations = durations && is_duration_unit(unit);
    last_unit = unit;
    if (unit.empty()) break;  // "1.5" is one number; "1m30s" goes on after its unit
  }
  if (count == 0) return {"", 0};
  if (durations) return {"<duration>", length};
  if (count == 1 && is_size_unit(last_unit)) return {"<size>", length};
  if (count == 1) return {"<n>" + std::string(last_unit), length};
  return {"", 0};
}

// What a maximal run of word characters (and, after a number, a fraction) starting at `text`
// stands for in the fingerprint, and how much of `text` it took.
std::pair<std::string, std::size_t> normalise_word(std::string_view text) {
  std::size_t end = 0;
  while (end < text.size() && is_word_char(text[end])) ++end;
  const std::string_view word = text.substr(0, end);
  const bool negative = word.size() > 1 && word.front() == '-';
  const std::size_t sign = negative ? 1 : 0;
  // 0x7ffd5a3c: an address or a hex code.
  if (word.size() > sign + 2 && word[sign] == '0' &&
      (word[sign + 1] == 'x' || word[sign + 1] == 'X') &&
      std::all_of(word.begin() + static_cast<std::ptrdiff_t>(sign + 2), word.end(), is_hex_digit)) {
    return {"<n>", end};
  }
  // A number, with its fraction and unit: the whole word, or a number of a dotted run
  // ("10.0.3.17") that ends it.
  const auto [quantity, length] = normalise_quantities(text.substr(sign));
  if (length > 0 && sign + length >= end) return {quantity, sign + length};
  if (std::none_of(word.begin(), word.end(), is_digit)) return {std::string(word), end};
  // A word whose parts are words and numbers: ord-42 and ord-1234, user_7.
  std::vector<std::string_view> parts;
  for (std::size_t part = 0; part <= word.size();) {
    const std::size_t part_end = std::min(word.find_first_of("-_", part), word.size());
    parts.push_back(word.substr(part, part_end - part));
    part = part_end + 1;
  }
  const auto plain = [](std::string_view part) {
    return all_digits(part) || std::none_of(part.begin(), part.end(), is_digit);
  };
  if (!std::all_of(parts.begin(), parts.end(), plain)) {
    // Event IDs, hex digests, UUIDs; shorter words with digits (utf8, x86_64) are words.
    return {word.size() >= 8 ? "<id>" : std::string(word), end};
  }
  std::string out;
  for (std::size_t i = 0, at = 0; i < parts.size(); at += parts[i].size() + 1, ++i) {
    out += all_digits(parts[i]) ? std::string("<n>") : std::string(parts[i]);
    if (at + parts[i].size() < word.size()) out += word[at + parts[i].size()];
  }
  return {out, end};
}

}  // namespace

std::string error_fingerprint(std::string_view message) {
  std::string out;
  std::size_t i = 0;
  const auto append_space = [&out]() {
    if (!out.empty() && out.back() != ' ') out += ' ';
  };
  while (i < message.size()) {
    const char c = message[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      append_space();
      ++i;
    } else if ((c == '\'' || c == '"' || c == '`') && (i == 0 || !is_word_char(message[i - 1]))) {
      // A quote opens a value only after a non-word character, so "can't" stays as it is.
      const std::size_t close = message.find(c, i + 1);
      if (close == std::string_view::npos) {
        out += c;
        ++i;
      } else {
        out += c;
        out += "<v>";
        out += c;
        i = close + 1;
      }
    } else if (is_word_char(c)) {
      const auto [normalised, length] = normalise_word(message.substr(i));
      out += normalised;
      i += length;
      // The rest of a dotted run of numbers ("10.0.3.17", "1.2.3") belongs to the first one.
      if (normalised == "<n>") {
        while (i + 1 < message.size() && message[i] == '.' && is_digit(message[i + 1])) {
          ++i;
          while (i < message.size() && is_digit(message[i])) ++i;
        }
      }
    } else {
      out += c;
      ++i;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace sluice::cli
