// The sluice schema, in one place: every sluice_* table, index and migration.
#pragma once

#include <string>
#include <vector>

namespace sluice::schema {

// migrations()[v - 1] takes a file from version v - 1 to v.
const std::vector<std::string>& migrations();

inline int current_version() { return static_cast<int>(migrations().size()); }

}  // namespace sluice::schema
