// Control characters in text sluice keeps and shows: the rule for names (topics, keys, IDs,
// consumers) and for what the CLI may print to a terminal as is.
#pragma once

#include <cstddef>
#include <string_view>

#include "utf8.hpp"

namespace sluice {

// The length of the control character at `p` (before `end`), or 0 when none starts there: a
// C0 control (below 0x20), DEL (0x7F), a C1 control in UTF-8 (U+0080 to U+009F, which a
// terminal may take as ESC [ and the like: U+009B is CSI), or a byte 0x80 to 0x9F that is no
// part of a UTF-8 character (the same controls in an 8-bit terminal).
inline std::size_t control_character_length(const char* p, const char* end) {
  const auto c = static_cast<unsigned char>(*p);
  if (c < 0x20 || c == 0x7F) return 1;
  if (c < 0x80) return 0;
  const std::size_t length = utf8_sequence_length(p, end);
  if (length == 2 && c == 0xC2 && static_cast<unsigned char>(p[1]) <= 0x9F) return 2;
  if (length == 0 && c <= 0x9F) return 1;
  return 0;
}

// True if `text` holds a control character of any kind above.
inline bool has_control_character(std::string_view text) {
  const char* p = text.data();
  const char* end = p + text.size();
  while (p != end) {
    if (control_character_length(p, end) != 0) return true;
    const std::size_t length = utf8_sequence_length(p, end);
    p += length == 0 ? 1 : length;
  }
  return false;
}

}  // namespace sluice
