// Relay throughput A -> JetStream -> B beside the plain JetStream publish rate of the same client
// in the same run: the floor for this path.
#pragma once

namespace sluice::bench {

struct RelayBenchResult {
  long long events = 0;
  // JetStreamClient::publish of the same messages, 512 per call: the floor.
  double plain_publish_per_second = 0;
  // From the relay's start until file B holds every event (relay and ingester running).
  double relay_events_per_second = 0;
  // relay / plain; the target is >= 0.5.
  double ratio = 0;
};

// Starts its own nats-server on 127.0.0.1 (free port, temporary store) and stops it before
// returning. `events` are spread over `keys` ordering keys. The floor and the relay are measured
// `rounds` times, alternating, each on its own stream and files; the best of each side counts,
// as in sluice-bench.
RelayBenchResult run_relay_bench(int events = 20000, int keys = 1000, int rounds = 3);

}  // namespace sluice::bench
