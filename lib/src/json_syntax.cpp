#include "json_syntax.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <system_error>

#include "utf8.hpp"

namespace sluice {
namespace {

// True if the JSON number `first`..`last` is too large for a double: nlohmann, which reads
// numbers with strtod, refuses a document holding one. One too small is fine: it reads as 0.
bool overflows_double(const char* first, const char* last) {
  const char* number = first;
  if (*first == '-') ++first;
  // The power of ten of the first significant digit.
  long long integer_digits = 0, zeros_before = 0;
  bool fraction = false, significant = false;
  for (; first != last && *first != 'e' && *first != 'E'; ++first) {
    if (*first == '.') {
      fraction = true;
      continue;
    }
    if (!fraction) ++integer_digits;
    if (!significant && *first == '0') ++zeros_before;
    significant = significant || *first != '0';
  }
  if (!significant) return false;
  long long exponent = 0;
  const bool negative = first != last && ++first != last && *first == '-';
  for (; first != last; ++first) {
    if (*first >= '0' && *first <= '9') {
      exponent = std::min(exponent * 10 + (*first - '0'), 1LL << 40);
    }
  }
  const long long power = integer_digits - 1 - zeros_before + (negative ? -exponent : exponent);
  // DBL_MAX is 1.797...e308: only at that power do the digits decide, as strtod rounds them.
  if (power != 308) return power > 308;
  double value;
  return std::from_chars(number, last, value).ec == std::errc::result_out_of_range;
}

class JsonScanner {
 public:
  explicit JsonScanner(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  bool document() {
    skip_space();
    if (!value()) return false;
    skip_space();
    return p_ == end_;
  }

 private:
  // Values are scanned with an explicit stack of open containers, so hostile nesting cannot
  // overflow the call stack.
  bool value() {
    int depth = 0;
    while (true) {
      skip_space();
      if (p_ == end_) return false;
      const char c = *p_;
      if (c == '{' || c == '[') {
        if (depth == kMaxJsonDepth) return false;
        open_[depth++] = c;
        ++p_;
        skip_space();
        if (p_ != end_ && *p_ == (c == '{' ? '}' : ']')) {
          ++p_;
          --depth;
        } else {
          if (c == '{' && !member_name()) return false;
          continue;
        }
      } else if (!scalar()) {
        return false;
      }
      // After a complete value: close containers or move to the next element.
      while (true) {
        if (depth == 0) return true;
        skip_space();
        if (p_ == end_) return false;
        const char closer = open_[depth - 1] == '{' ? '}' : ']';
        if (*p_ == closer) {
          ++p_;
          --depth;
          continue;
        }
        if (*p_ != ',') return false;
        ++p_;
        if (open_[depth - 1] == '{' && !member_name()) return false;
        break;
      }
    }
  }

  bool member_name() {
    skip_space();
    if (!string()) return false;
    skip_space();
    if (p_ == end_ || *p_ != ':') return false;
    ++p_;
    return true;
  }

  bool scalar() {
    switch (*p_) {
      case '"':
        return string();
      case 't':
        return literal("true");
      case 'f':
        return literal("false");
      case 'n':
        return literal("null");
      default:
        return number();
    }
  }

  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() ||
        std::string_view(p_, word.size()) != word) {
      return false;
    }
    p_ += word.size();
    return true;
  }

  bool digits() {
    const char* start = p_;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return p_ != start;
  }

  bool number() {
    const char* start = p_;
    if (p_ != end_ && *p_ == '-') ++p_;
    if (p_ == end_) return false;
    const char* integer = p_;
    if (*p_ == '0') {
      ++p_;
    } else if (!digits()) {
      return false;
    }
    // Fewer digits than DBL_MAX's 309 and no exponent: within a double's range.
    bool may_overflow = p_ - integer > 308;
    if (p_ != end_ && *p_ == '.') {
      ++p_;
      if (!digits()) return false;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digits()) return false;
      may_overflow = true;
    }
    return !may_overflow || !overflows_double(start, p_);
  }

  bool string() {
    if (p_ == end_ || *p_ != '"') return false;
    ++p_;
    while (p_ != end_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        if (!escape()) return false;
      } else if (c < 0x80) {
        ++p_;
      } else if (!utf8_sequence()) {
        return false;
      }
    }
    return false;
  }

  bool escape() {
    ++p_;
    if (p_ == end_) return false;
    const char c = *p_++;
    if (c != 'u')
      return c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' ||
             c == 't';
    int unit = code_unit();
    if (unit < 0xd800 || unit > 0xdfff) return unit >= 0;
    // A surrogate escape must be a high one followed by an escaped low one: nlohmann, which
    // every reader of a payload in sluice (and many handlers) parses with, refuses anything
    // else, as I-JSON (RFC 7493) does.
    if (unit > 0xdbff || end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
    p_ += 2;
    unit = code_unit();
    return unit >= 0xdc00 && unit <= 0xdfff;
  }

  // The four hex digits of a \u escape as a number, or -1 if they are not four hex digits.
  int code_unit() {
    int unit = 0;
    for (int i = 0; i < 4; ++i, ++p_) {
      if (p_ == end_) return -1;
      const char h = *p_;
      int digit;
      if (h >= '0' && h <= '9') {
        digit = h - '0';
      } else if (h >= 'a' && h <= 'f') {
        digit = h - 'a' + 10;
      } else if (h >= 'A' && h <= 'F') {
        digit = h - 'A' + 10;
      } else {
        return -1;
      }
      unit = unit * 16 + digit;
    }
    return unit;
  }

  // One multi-byte UTF-8 character.
  bool utf8_sequence() {
    const std::size_t length = utf8_sequence_length(p_, end_);
    p_ += length;
    return length != 0;
  }

  void skip_space() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }

  const char* p_;
  const char* end_;
  std::array<char, kMaxJsonDepth> open_{};
};

}  // namespace

bool is_valid_json(std::string_view text) { return JsonScanner(text).document(); }

}  // namespace sluice
