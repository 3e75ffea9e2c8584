// `sluice console`'s API on a large file: each page's call timed over HTTP.
#pragma once

#include "run.hpp"

namespace bench {

// Builds a file of 1M events (a quick run: 20k) over a week with 1% dead letters, starts
// `sluice console` on it (the binary named by SLUICE_CLI at build time) and times each API call
// the page makes. Target: each answers in 200 ms or less (p50 of 5).
void run_console_cases(Run& run);

}  // namespace bench
