// Delivery at scale (10k, 100k, 1M pending; 1M delivered retained), memory over 1M delivered
// events, and the cost of transient failures to the other events.
#pragma once

#include "run.hpp"

namespace bench {

void run_scale_cases(Run& run);

}  // namespace bench
