#include "operation.hpp"

#include "random.hpp"

namespace sluice::model {
namespace {

EventSpec random_event(Rng& rng) {
  EventSpec e;
  e.topic = rng.below(3);
  if (rng.chance(75)) e.key = rng.below(4);
  if (rng.chance(20)) e.id = rng.below(12);
  if (rng.chance(15)) e.dedup = rng.below(8);
  if (rng.chance(20)) {
    e.delay =
        rng.chance(50) ? Duration(rng.between(1, 3000)) : Duration(rng.between(60'000, 7'200'000));
  }
  return e;
}

Duration clock_step(Rng& rng) {
  return rng.chance(70) ? Duration(rng.between(100, 10'000))
                        : Duration(rng.between(60'000, 7'200'000));
}

}  // namespace

std::vector<Operation> generate_operations(std::uint64_t seed, int count, int instances,
                                           int consumers, bool threaded, bool seams, bool stalls) {
  Rng rng(mix(seed ^ 0x0b5));
  // Flow control draws from a stream of its own, so that the other operations of a seed stay as
  // they were.
  Rng flow(mix(seed ^ 0xf10c));
  std::vector<Operation> ops;
  for (int i = 0; i < count; ++i) {
    Operation op;
    op.instance = rng.below(instances);
    op.consumer = rng.below(consumers);
    op.pick = rng.next();
    const int roll = rng.below(100);
    if (roll < 28) {
      op.kind = OpKind::kEnqueue;
    } else if (roll < 35) {
      op.kind = OpKind::kEnqueueBatch;
    } else if (roll < 37) {
      op.kind = OpKind::kEnqueueRolledBack;
    } else if (roll < 38) {
      op.kind = OpKind::kEnqueueBadBatch;
    } else if (roll < 63) {
      op.kind = OpKind::kDrain;
    } else if (roll < 74) {
      op.kind = OpKind::kClockForward;
      op.step = clock_step(rng);
    } else if (roll < 79) {
      op.kind = OpKind::kClockBack;
      op.step = clock_step(rng);
    } else if (roll < 84) {
      op.kind = OpKind::kReplay;
    } else if (roll < 87) {
      op.kind = OpKind::kDiscard;
    } else if (roll < 91) {
      op.kind = OpKind::kBackfill;
    } else if (roll < 93) {
      op.kind = OpKind::kBackfillInFlight;
    } else if (roll < 94) {
      op.kind = OpKind::kReplayInFlight;
    } else if (roll < 96) {
      op.kind = OpKind::kPrune;
    } else if (roll < 98 || !threaded) {
      op.kind = OpKind::kRestartWorker;
    } else {
      op.kind = OpKind::kStartStop;
    }
    // Seam sequences run on real time: a clock step would do nothing there, so they drain.
    if (seams && (op.kind == OpKind::kClockForward || op.kind == OpKind::kClockBack))
      op.kind = OpKind::kDrain;
    if (rng.chance(3)) op.kind = OpKind::kRemoveReadd;
    if (threaded && rng.chance(2)) op.kind = OpKind::kForeignLockInFlight;
    if (seams && rng.chance(3)) op.kind = OpKind::kCStartInFlight;
    if (seams && rng.chance(8))
      op.kind = rng.chance(50) ? OpKind::kSqlCloseMidClaim : OpKind::kSqlRelease;
    // Drawn only in stall sequences, so that every other sequence keeps its operations.
    if (stalls && rng.chance(6)) op.kind = OpKind::kStallInFlight;
    // It steps the clock past claim_lease, an hour in a stall sequence: see kStallInFlight.
    if (stalls && op.kind == OpKind::kForeignLockInFlight) op.kind = OpKind::kDrain;
    const int flow_roll = flow.below(100);
    if (flow_roll < 3) {
      op.kind = OpKind::kPause;
      op.step = clock_step(flow);
    } else if (flow_roll < 6) {
      op.kind = OpKind::kResume;
    } else if (flow_roll < 9) {
      op.kind = OpKind::kThrottleInFlight;
      op.step = flow.chance(50) ? Duration(flow.between(0, 5000)) : clock_step(flow);
    }
    const bool enqueues = op.kind == OpKind::kEnqueue || op.kind == OpKind::kEnqueueBatch ||
                          op.kind == OpKind::kEnqueueRolledBack ||
                          op.kind == OpKind::kEnqueueBadBatch;
    if (enqueues) {
      // Mostly a few events; sometimes a burst, so that claims fill and budgets cut.
      const int n = rng.chance(15) ? static_cast<int>(rng.between(8, 40)) : 1 + rng.below(4);
      for (int e = 0; e < n; ++e) op.events.push_back(random_event(rng));
    }
    ops.push_back(std::move(op));
  }
  return ops;
}

const char* kind_name(OpKind kind) {
  static const char* const names[] = {"enqueue",
                                      "enqueue_batch",
                                      "enqueue+rollback",
                                      "enqueue_batch(bad)",
                                      "drain",
                                      "clock+",
                                      "clock-",
                                      "replay",
                                      "discard",
                                      "backfill",
                                      "backfill(in flight)",
                                      "replay(in flight)",
                                      "prune",
                                      "restart",
                                      "start+stop",
                                      "sql close mid-claim",
                                      "sql release",
                                      "remove+add again",
                                      "foreign write lock(in flight)",
                                      "C start(in flight)",
                                      "stall past the lease(in flight)",
                                      "pause",
                                      "resume",
                                      "throttle(in flight)"};
  return names[static_cast<int>(kind)];
}

std::string describe(const Operation& op) {
  std::string out = kind_name(op.kind);
  switch (op.kind) {
    case OpKind::kDrain:
    case OpKind::kRestartWorker:
    case OpKind::kStartStop:
      return out + " instance " + std::to_string(op.instance);
    case OpKind::kClockForward:
    case OpKind::kClockBack:
      return out + std::to_string(op.step.count()) + "ms";
    case OpKind::kPause:
      return out + " c" + std::to_string(op.consumer) +
             (op.pick % 2 == 0 ? " until resumed"
                               : " for " + std::to_string(op.step.count()) + "ms");
    case OpKind::kResume:
      return out + " c" + std::to_string(op.consumer);
    case OpKind::kThrottleInFlight:
      return out + " instance " + std::to_string(op.instance) + " for " +
             std::to_string(op.step.count()) + "ms";
    case OpKind::kBackfill:
    case OpKind::kBackfillInFlight:
    case OpKind::kRemoveReadd:
      return out + " c" + std::to_string(op.consumer) + " pick " + std::to_string(op.pick % 1000);
    case OpKind::kReplay:
    case OpKind::kDiscard:
    case OpKind::kPrune:
    case OpKind::kSqlCloseMidClaim:
    case OpKind::kSqlRelease:
      return out + " pick " + std::to_string(op.pick % 1000);
    default:
      break;
  }
  out += " [";
  for (std::size_t i = 0; i < op.events.size(); ++i) {
    const EventSpec& e = op.events[i];
    if (i > 0) out += ", ";
    out += "t" + std::to_string(e.topic);
    if (e.key >= 0) out += " k" + std::to_string(e.key);
    if (e.id >= 0) out += " id-" + std::to_string(e.id);
    if (e.dedup >= 0) out += " d-" + std::to_string(e.dedup);
    if (e.delay.count() > 0) out += " +" + std::to_string(e.delay.count()) + "ms";
  }
  return out + "]";
}

}  // namespace sluice::model
