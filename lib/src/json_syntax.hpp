// A fast check that text is one JSON document (RFC 8259), without building it.
#pragma once

#include <string_view>

namespace sluice {

// Deepest nesting of arrays and objects accepted.
inline constexpr int kMaxJsonDepth = 512;

// True if `text` is exactly one JSON value (surrounding white space allowed) with valid UTF-8 in
// its strings, escaped surrogates only in pairs, and at most kMaxJsonDepth levels of nesting.
// Allocates nothing: enqueue calls it for every payload, where parsing into a document cost more
// than the insert itself.
bool is_valid_json(std::string_view text);

}  // namespace sluice
