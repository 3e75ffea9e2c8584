// UTF-8 validity, the rule for every text sluice keeps as JSON strings (payload strings,
// header names and values): a byte that is not UTF-8 could only be stored by replacing it.
#pragma once

#include <cstddef>
#include <string_view>

namespace sluice {

// Length of the UTF-8 character starting at `p`, or 0 if none does: no overlong forms, no
// surrogates, nothing above U+10FFFF, nothing cut short by `end`.
inline std::size_t utf8_sequence_length(const char* p, const char* end) {
  const auto lead = static_cast<unsigned char>(*p);
  if (lead < 0x80) return 1;
  std::size_t length;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (static_cast<std::size_t>(end - p) < length) return 0;
  for (std::size_t i = 1; i < length; ++i) {
    const auto c = static_cast<unsigned char>(p[i]);
    if (c < (i == 1 ? low : 0x80) || c > (i == 1 ? high : 0xBF)) return 0;
  }
  return length;
}

// True if every byte of `text` belongs to a valid UTF-8 character (NUL included).
inline bool is_valid_utf8(std::string_view text) {
  const char* p = text.data();
  const char* end = p + text.size();
  while (p != end) {
    const std::size_t length = utf8_sequence_length(p, end);
    if (length == 0) return false;
    p += length;
  }
  return true;
}

}  // namespace sluice
