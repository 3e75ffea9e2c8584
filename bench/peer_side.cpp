#include "peer_side.hpp"

#include <SQLiteCpp/Transaction.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "delivery_rig.hpp"
#include "stopwatch.hpp"
#include "workload.hpp"

namespace bench {

void SideFigures::keep_best(const SideFigures& round) {
  enqueue_per_s = std::max(enqueue_per_s, round.enqueue_per_s);
  process_per_s = std::max(process_per_s, round.process_per_s);
  process_wall_per_s = std::max(process_wall_per_s, round.process_wall_per_s);
}

SideFigures sluice_side(const std::string& path, sluice::Synchronous synchronous, long long jobs) {
  const Storage storage = file_storage(synchronous);
  DeliveryRig rig(path, storage, storage.options(), 1);
  const std::vector<std::string> payloads = sample_payloads();
  std::vector<sluice::NewEvent> events(jobs);
  for (long long n = 0; n < jobs; ++n) {
    events[n].topic = kTopic;
    events[n].payload = payloads[n % payloads.size()];
  }
  SideFigures figures;
  Stopwatch enqueue;
  SQLite::Transaction tx(rig.producer(), SQLite::TransactionBehavior::IMMEDIATE);
  rig.outbox().enqueue_batch(events);
  tx.commit();
  figures.enqueue_per_s = jobs / enqueue.unstolen_seconds();
  Stopwatch process;
  const sluice::DrainResult drained = rig.worker().run_until_idle();
  figures.process_per_s = jobs / process.unstolen_seconds();
  figures.process_wall_per_s = jobs / process.seconds();
  if (drained.delivered != jobs || rig.written() != jobs) {
    throw std::runtime_error("bench: sluice delivered " + std::to_string(drained.delivered) +
                             " of " + std::to_string(jobs) + " jobs");
  }
  return figures;
}

long long payload_bytes(long long jobs) {
  const std::vector<std::string> payloads = sample_payloads();
  long long bytes = 0;
  for (long long n = 0; n < jobs; ++n) bytes += payloads[n % payloads.size()].size();
  return bytes;
}

Result peer_row(const std::string& name, long long jobs, double sluice, double peer) {
  Result result;
  result.name = name;
  result.events = jobs;
  result.events_per_s = sluice;
  result.floor_events_per_s = peer;
  result.ratio = sluice / peer;
  return result;
}

}  // namespace bench
