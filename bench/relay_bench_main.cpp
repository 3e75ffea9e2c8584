// `sluice-relay-bench [EVENTS [ROUNDS]]`: prints the relay's throughput beside the plain publish
// floor, measured in ROUNDS (default 5) rounds of EVENTS (default 50000) each; the ratio is the
// median of the rounds' ratios.
#include <cstdio>
#include <cstdlib>

#include "relay_bench.hpp"

int main(int argc, char** argv) {
  const int events = argc > 1 ? std::atoi(argv[1]) : 50000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  if (events < 1 || rounds < 1) {
    std::fprintf(stderr, "usage: sluice-relay-bench [EVENTS [ROUNDS]], both >= 1\n");
    return 2;
  }
  const auto r = sluice::bench::run_relay_bench(events, 1000, rounds);
  std::printf(
      "relay A -> JetStream -> B: %lld events; relay %.0f events/s, plain JetStream publish %.0f "
      "msg/s (medians); ratio %.2f, the median of %d rounds' ratios (%.2f-%.2f); target >= 0.50\n",
      r.events, r.relay_events_per_second, r.plain_publish_per_second, r.ratio, r.rounds,
      r.lowest_ratio, r.highest_ratio);
  std::printf(
      "relay, events alternating between its two topics: %.0f events/s (median); %.2f of the "
      "single-topic relay (median of the rounds' ratios); target >= 0.90\n",
      r.alternating_events_per_second, r.alternating_ratio);
  return r.ratio >= 0.5 && r.alternating_ratio >= 0.9 ? 0 : 1;
}
