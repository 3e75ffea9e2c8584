// Compares two sides (the floor and sluice) taking turns in short slices, so that both meet the
// same moments of a host whose speed drifts.
#pragma once

#include "side.hpp"

namespace bench {

struct Compared {
  double floor = 0;   // the floor's events per second over all its slices
  double sluice = 0;  // sluice's
  double ratio = 0;   // the median of the slices' ratios (sluice's rate over the floor's)
  double lowest = 0;  // the slices' lowest and highest ratio
  double highest = 0;
  int slices = 0;
  long long slice_events = 0;
};

// Runs `events` events on each side in `slices` turns of equal size: each turn prepares both
// sides, then runs one and the other, the floor first in every other turn. On this host the
// same work took from 0.38 to 0.71 s of CPU time in runs a second apart (the virtual machine's
// speed, which no per-thread clock sees), so two measurements a second apart compared the host's
// moments as much as the code; slices of tens of milliseconds compare the code.
Compared side_by_side(Side& floor, Side& sluice, long long events, int slices);

}  // namespace bench
