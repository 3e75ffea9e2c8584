#include "attempt_log.hpp"

#include <charconv>

#include "time_format.hpp"

namespace sluice {
namespace {

void append_number(std::string& out, long long value) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out.append(digits, end);
}

// A JSON string of `text`; bytes past ASCII are copied as they are, as SQLite's JSON reads them.
void append_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte == '"' || byte == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20) {
      out += "\\u00";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace

void write_attempt_log(std::string& out, int attempt, TimePoint at, std::string_view outcome,
                       std::string_view error) {
  out.clear();
  out += "[[";
  append_number(out, attempt);
  out += ',';
  append_number(out, to_millis(at));
  out += ',';
  append_string(out, outcome);
  out += ',';
  if (error.empty()) {
    out += "null";
  } else {
    append_string(out, error);
  }
  out += "]]";
}

}  // namespace sluice
