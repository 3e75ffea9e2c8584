// Fuzz target: sluice's own JSON syntax check (every payload passes through it on enqueue) must
// agree with nlohmann's parser on every input within the depth limit, and never read past it.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "json_syntax.hpp"

namespace {

// Deepest nesting of arrays and objects in `text`, which nlohmann accepted (so brackets inside
// strings are the only ones to skip).
int nesting(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool ours = sluice::is_valid_json(text);
  // nlohmann ends its input at a NUL byte; a raw NUL is valid nowhere in JSON.
  const bool theirs = text.find('\0') == std::string_view::npos && nlohmann::json::accept(text) &&
                      nesting(text) <= sluice::kMaxJsonDepth;
  if (ours != theirs) {
    std::fprintf(stderr, "is_valid_json says %s, nlohmann says %s, for %zu bytes: %.*s\n",
                 ours ? "valid" : "invalid", theirs ? "valid" : "invalid", size,
                 static_cast<int>(std::min<std::size_t>(size, 200)), text.data());
    std::abort();
  }
  return 0;
}
