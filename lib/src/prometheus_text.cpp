#include "prometheus_text.hpp"

#include <charconv>

namespace sluice::prometheus {

std::string label(std::string_view name, std::string_view value) {
  std::string out(name);
  out += "=\"";
  for (char c : value) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

std::string family(std::string_view name, std::string_view type, std::string_view help) {
  std::string out = "# HELP ";
  out.append(name).append(" ").append(help).append("\n# TYPE ");
  out.append(name).append(" ").append(type).append("\n");
  return out;
}

std::string sample(std::string_view name, std::string_view labels, double value) {
  // Fixed notation, shortest round trip: 1e21 is written with its 22 digits, not as 1e+21.
  char digits[400];
  const auto written =
      std::to_chars(digits, digits + sizeof digits, value, std::chars_format::fixed);
  std::string out(name);
  out.append("{").append(labels).append("} ");
  out.append(digits, written.ptr).append("\n");
  return out;
}

}  // namespace sluice::prometheus
