#include "attempt_log.hpp"

#include <charconv>

#include "json_string.hpp"
#include "time_format.hpp"

namespace sluice {
namespace {

void append_number(std::string& out, long long value) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out.append(digits, end);
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
  append_json_string(out, outcome);
  out += ',';
  if (error.empty()) {
    out += "null";
  } else {
    append_json_string(out, error);
  }
  out += "]]";
}

}  // namespace sluice
