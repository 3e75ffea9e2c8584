#include "side_by_side.hpp"

#include <algorithm>
#include <vector>

#include "latency_summary.hpp"

namespace bench {

Compared side_by_side(Side& floor, Side& sluice, long long events, int slices) {
  Compared compared;
  compared.slices = slices;
  compared.slice_events = events / slices;
  std::vector<double> ratios;
  double floor_seconds = 0;
  double sluice_seconds = 0;
  long long done = 0;
  for (int slice = 0; slice < slices; ++slice) {
    const long long n = slice + 1 == slices ? events - done : compared.slice_events;
    floor.prepare(n);
    sluice.prepare(n);
    double floor_time = 0;
    double sluice_time = 0;
    if (slice % 2 == 0) {
      floor_time = floor.run(n);
      sluice_time = sluice.run(n);
    } else {
      sluice_time = sluice.run(n);
      floor_time = floor.run(n);
    }
    floor_seconds += floor_time;
    sluice_seconds += sluice_time;
    ratios.push_back(floor_time / sluice_time);
    done += n;
  }
  compared.floor = events / floor_seconds;
  compared.sluice = events / sluice_seconds;
  compared.lowest = *std::min_element(ratios.begin(), ratios.end());
  compared.highest = *std::max_element(ratios.begin(), ratios.end());
  compared.ratio = median(std::move(ratios));
  return compared;
}

}  // namespace bench
