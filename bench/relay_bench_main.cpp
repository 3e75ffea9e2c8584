// `sluice-relay-bench [EVENTS]`: prints the relay's throughput beside the plain publish floor.
#include <cstdio>
#include <cstdlib>

#include "relay_bench.hpp"

int main(int argc, char** argv) {
  const int events = argc > 1 ? std::atoi(argv[1]) : 20000;
  const auto r = sluice::bench::run_relay_bench(events);
  std::printf(
      "relay A -> JetStream -> B: %lld events, %.0f events/s; plain JetStream publish %.0f msg/s; "
      "ratio %.2f (target >= 0.50)\n",
      r.events, r.relay_events_per_second, r.plain_publish_per_second, r.ratio);
  return r.ratio >= 0.5 ? 0 : 1;
}
