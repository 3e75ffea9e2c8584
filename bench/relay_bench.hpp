// Relay throughput A -> JetStream -> B beside the plain JetStream publish rate of the same client
// in the same run: the floor for this path.
#pragma once

namespace sluice::bench {

struct RelayBenchResult {
  long long events = 0;
  int rounds = 0;
  // JetStreamClient::publish of the same messages, 512 per call: the floor. Median of the rounds.
  double plain_publish_per_second = 0;
  // From the relay's start until file B holds every event (relay and ingester running). Median
  // of the rounds.
  double relay_events_per_second = 0;
  // The median of the rounds' relay / plain ratios; the target is >= 0.5.
  double ratio = 0;
  double lowest_ratio = 0;
  double highest_ratio = 0;
  // The same relay (two topics) when the events alternate between its two topics, and its ratio
  // to the single-topic run of the same round (median of the rounds). A batch that ended at every
  // change of topic made this 0.1-0.2; the target is >= 0.9.
  double alternating_events_per_second = 0;
  double alternating_ratio = 0;
};

// Starts its own nats-server on 127.0.0.1 (free port, temporary store) and stops it before
// returning. `events` are spread over `keys` ordering keys. Each round measures the floor and
// then the relay, each on its own stream and files, then the relay again with the events'
// topics alternating. A round's ratio compares two measurements
// seconds apart, so the host's drift (which here reaches 30% over seconds) mostly cancels, and
// the median over rounds drops the rounds a burst of other load hit.
RelayBenchResult run_relay_bench(int events = 50000, int keys = 1000, int rounds = 5);

}  // namespace sluice::bench
