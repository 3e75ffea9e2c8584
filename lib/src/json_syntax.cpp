#include "json_syntax.hpp"

#include <array>

#include "utf8.hpp"

namespace sluice {
namespace {

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
    if (p_ != end_ && *p_ == '-') ++p_;
    if (p_ == end_) return false;
    if (*p_ == '0') {
      ++p_;
    } else if (!digits()) {
      return false;
    }
    if (p_ != end_ && *p_ == '.') {
      ++p_;
      if (!digits()) return false;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digits()) return false;
    }
    return true;
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
