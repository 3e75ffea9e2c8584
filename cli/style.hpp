// Colour for human output: only on a terminal, and never when NO_COLOR is set.
#pragma once

#include <string>

namespace sluice::cli {

// Whether output written to `fd` goes to a terminal.
bool is_terminal(int fd);

// Whether to colour output written to `fd`: a terminal and no NO_COLOR in the environment
// (https://no-color.org; any value, even empty, turns colour off).
bool colour_wanted(int fd);

// Thread-safe: a plain value. Wraps text in ANSI colours when enabled, else returns it as is.
class Style {
 public:
  explicit Style(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }
  std::string bold(const std::string& text) const { return wrap("1", text); }
  std::string dim(const std::string& text) const { return wrap("2", text); }
  std::string red(const std::string& text) const { return wrap("31", text); }
  std::string green(const std::string& text) const { return wrap("32", text); }
  std::string yellow(const std::string& text) const { return wrap("33", text); }

 private:
  std::string wrap(const char* code, const std::string& text) const;
  bool enabled_;
};

// The number of terminal columns `text` takes: UTF-8 code points, ANSI colour codes not counted.
std::size_t display_width(const std::string& text);

}  // namespace sluice::cli
