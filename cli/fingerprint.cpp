#include "fingerprint.hpp"

#include <algorithm>
#include <cctype>

namespace sluice::cli {
namespace {

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), is_digit);
}

// What a maximal run of word characters stands for in the fingerprint.
std::string normalise_word(std::string_view word) {
  const std::string_view unsigned_part = word.front() == '-' ? word.substr(1) : word;
  if (all_digits(unsigned_part)) return "<n>";
  const bool has_digit = std::any_of(word.begin(), word.end(), is_digit);
  if (has_digit && word.size() >= 8) return "<id>";
  return std::string(word);
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
      std::size_t end = i;
      while (end < message.size() && is_word_char(message[end])) ++end;
      std::string_view word = message.substr(i, end - i);
      std::string normalised = normalise_word(word);
      // A decimal point between digit runs belongs to the number: "3.5" is one <n>.
      if (normalised == "<n>") {
        while (end + 1 < message.size() && message[end] == '.' && is_digit(message[end + 1])) {
          std::size_t next = end + 1;
          while (next < message.size() && is_digit(message[next])) ++next;
          end = next;
        }
      }
      out += normalised;
      i = end;
    } else {
      out += c;
      ++i;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace sluice::cli
