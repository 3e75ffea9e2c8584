// Latencies: enqueue-commit to handler-commit with the worker idle, in-process and across
// processes; and the app's own enqueue transaction while a worker drains a large backlog.
#pragma once

#include "run.hpp"

namespace bench {

void run_latency_cases(Run& run);

}  // namespace bench
