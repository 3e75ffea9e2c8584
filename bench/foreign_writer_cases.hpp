// A writer of the app's own table that uses SQLite's default busy handler, beside a worker at
// full drain: whether its writes get through, how long they wait, and what sharing the write
// lock with it costs the drain.
#pragma once

#include "run.hpp"

namespace bench {

void run_foreign_writer_cases(Run& run);

}  // namespace bench
