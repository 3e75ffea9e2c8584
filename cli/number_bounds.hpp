// Bounds of numeric options, reported as a person would read them. CLI11's own range checks
// print their unbounded side in full: "not in range 0 to 1.797...e+308" with 300 digits.
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <limits>
#include <string>

namespace sluice::cli {

// A whole number from `minimum` to `maximum`: "must be a whole number, 0 or more, not '-1'".
inline CLI::Validator whole_number_in(long long minimum,
                                      long long maximum = std::numeric_limits<long long>::max()) {
  const std::string bound =
      std::to_string(minimum) + (maximum == std::numeric_limits<long long>::max()
                                     ? " or more"
                                     : " to " + std::to_string(maximum));
  return CLI::Validator(
      [bound, minimum, maximum](std::string& text) -> std::string {
        long long value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size() || value < minimum ||
            value > maximum) {
          return "must be a whole number, " + bound + ", not '" + text + "'";
        }
        return {};
      },
      bound);
}

// A number above zero: "must be a number above 0, not '-2'".
inline CLI::Validator number_above_zero() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size() || !(value > 0)) {
          return "must be a number above 0, not '" + text + "'";
        }
        return {};
      },
      "above 0");
}

}  // namespace sluice::cli
