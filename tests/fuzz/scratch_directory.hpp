// Where a fuzz target keeps the files it makes.
#pragma once

#include <string>

namespace sluice::fuzz {

// A directory of its own under $TMPDIR (or /tmp) for this process, removed at exit. Thread-safe.
const std::string& scratch_directory();

}  // namespace sluice::fuzz
