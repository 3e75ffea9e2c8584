// Error fingerprints: dead letters whose errors differ only in the data they mention group
// together under `dlq list --group`.
#pragma once

#include <string>
#include <string_view>

namespace sluice::cli {

// `message` with its variable parts replaced: quoted text by '…' placeholders ('<v>', "<v>");
// durations in any unit (1036ms, 2.5s, 1m30s) by <duration>, sizes (10KiB, 2GB) by <size>, other
// numbers (integers, decimals, negatives, dotted runs such as 10.0.3.17, hex such as 0x7ffd) by
// <n>, a number with another unit keeping it (5xx: <n>xx); IDs (UUIDs, and words of 8 or more
// characters mixing letters and digits, such as event IDs or hex digests) by <id>, and the
// number parts of shorter words (ord-42: ord-<n>); whitespace runs collapse to one space.
// "order 42 failed after 1036ms: card 'x1' declined (id 01JD0F3W5R8M9K2Q7Y4T6V1B3N)" becomes
// "order <n> failed after <duration>: card '<v>' declined (id <id>)".
std::string error_fingerprint(std::string_view message);

}  // namespace sluice::cli
