#include "style.hpp"

#include <unistd.h>

#include <cstdlib>

namespace sluice::cli {

bool is_terminal(int fd) { return isatty(fd) == 1; }

bool colour_wanted(int fd) { return is_terminal(fd) && std::getenv("NO_COLOR") == nullptr; }

std::string Style::wrap(const char* code, const std::string& text) const {
  if (!enabled_ || text.empty()) return text;
  return std::string("\x1b[") + code + "m" + text + "\x1b[0m";
}

std::size_t display_width(const std::string& text) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte == 0x1b && i + 1 < text.size() && text[i + 1] == '[') {
      while (i < text.size() && text[i] != 'm') ++i;
      continue;
    }
    const bool continuation_byte = (byte & 0xC0) == 0x80;
    if (!continuation_byte) ++width;
  }
  return width;
}

}  // namespace sluice::cli
