#include "printable.hpp"

#include "control_characters.hpp"

namespace sluice::cli {

std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string shown;
  shown.reserve(text.size());
  const char* p = text.data();
  const char* end = p + text.size();
  while (p != end) {
    const std::size_t control = control_character_length(p, end);
    if (control == 1) {
      const auto c = static_cast<unsigned char>(*p);
      shown += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
    } else if (control == 2) {
      const auto c = static_cast<unsigned char>(p[1]);  // U+0080..U+009F is C2 80..C2 9F
      shown += {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
    } else {
      // A whole character at a time: its continuation bytes may lie in 80..9F.
      const std::size_t length = utf8_sequence_length(p, end);
      shown.append(p, length == 0 ? 1 : length);
      p += length == 0 ? 1 : length;
      continue;
    }
    p += control;
  }
  return shown;
}

}  // namespace sluice::cli
