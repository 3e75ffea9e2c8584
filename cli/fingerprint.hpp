// Error fingerprints: dead letters whose errors differ only in the data they mention group
// together under `dlq list --group`.
#pragma once

#include <string>
#include <string_view>

namespace sluice::cli {

// `message` with its variable parts replaced: quoted text by '…' placeholders ('<v>', "<v>"),
// numbers (integers, decimals, negatives) by <n>, IDs (UUIDs, and words of 8 or more characters
// with a digit, such as event IDs or hex digests) by <id>; whitespace runs collapse to one space.
// "order 42 failed: card 'x1' declined (id 01JD0F3W5R8M9K2Q7Y4T6V1B3N)" becomes
// "order <n> failed: card '<v>' declined (id <id>)".
std::string error_fingerprint(std::string_view message);

}  // namespace sluice::cli
