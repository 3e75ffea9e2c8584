// Writing Prometheus's text exposition format (version 0.0.4): each family with its HELP and
// TYPE lines, label values escaped, sample values exact.
#pragma once

#include <string>
#include <string_view>

namespace sluice::prometheus {

// `name="value"` with the value escaped as the format requires: backslash, double quote and line
// feed. An unescaped quote ended the label early and broke the whole exposition.
std::string label(std::string_view name, std::string_view value);

// "# HELP name help\n# TYPE name type\n".
std::string family(std::string_view name, std::string_view type, std::string_view help);

// `name{labels} value\n` with the value exact: integers in full (a default stream printed
// 1234567 as 1.23457e+06), fractions as the shortest decimal that reads back as the same double,
// so seconds counted in milliseconds keep their three decimals. Integers are exact up to 2^53.
std::string sample(std::string_view name, std::string_view labels, double value);

}  // namespace sluice::prometheus
