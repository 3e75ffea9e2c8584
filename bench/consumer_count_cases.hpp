// Delivery cost per event when many consumers each have a little to do: the per-consumer work of
// a round must not dominate.
#pragma once

#include "run.hpp"

namespace bench {

void run_consumer_count_cases(Run& run);

}  // namespace bench
