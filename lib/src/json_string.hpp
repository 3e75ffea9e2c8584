// JSON string literals written by hand into a reused buffer, for the few JSON texts sluice builds
// on hot or simple paths (an attempt log entry, a list of topics).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

// Appends `text` to `out` as a JSON string literal. Bytes past ASCII are copied as they are, as
// SQLite's JSON functions read them.
void append_json_string(std::string& out, std::string_view text);

// `ids` as a JSON array of numbers, e.g. a worker's consumer ids for json_each().
std::string json_id_array(const std::vector<std::int64_t>& ids);

}  // namespace sluice
