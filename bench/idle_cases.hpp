// What a started worker with nothing due costs: write transactions, CPU time and WAL growth
// while it idles, in the states a worker is left in (nothing to do, a key parked behind a dead
// letter, a retry due much later, several consumers).
#pragma once

#include "run.hpp"

namespace bench {

void run_idle_cases(Run& run);

}  // namespace bench
