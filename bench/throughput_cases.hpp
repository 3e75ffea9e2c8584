// Enqueue and delivery throughput of sluice against the floor, on every storage.
#pragma once

#include "run.hpp"

namespace bench {

void run_throughput_cases(Run& run);

}  // namespace bench
