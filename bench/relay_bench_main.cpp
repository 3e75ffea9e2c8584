// `sluice-relay-bench [EVENTS [ROUNDS]]`: prints the relay's throughput beside the plain publish
// floor, each the best of ROUNDS (default 3) alternating measurements.
#include <cstdio>
#include <cstdlib>

#include "relay_bench.hpp"

int main(int argc, char** argv) {
  const int events = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  if (events < 1 || rounds < 1) {
    std::fprintf(stderr, "usage: sluice-relay-bench [EVENTS [ROUNDS]], both >= 1\n");
    return 2;
  }
  const auto r = sluice::bench::run_relay_bench(events, 1000, rounds);
  std::printf(
      "relay A -> JetStream -> B: %lld events, %.0f events/s; plain JetStream publish %.0f msg/s; "
      "ratio %.2f (target >= 0.50); best of %d rounds each\n",
      r.events, r.relay_events_per_second, r.plain_publish_per_second, r.ratio, rounds);
  return r.ratio >= 0.5 ? 0 : 1;
}
