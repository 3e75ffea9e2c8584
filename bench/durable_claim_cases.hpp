// Issue 28: the sync that makes an outside-transaction consumer's claim durable on kNormal.
#pragma once

#include "run.hpp"

namespace bench {

void run_durable_claim_cases(Run& run);

}  // namespace bench
