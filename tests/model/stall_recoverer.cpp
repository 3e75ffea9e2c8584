// The other side of the model's "stalled past its lease" operation: a worker of another process
// that cannot look the stalled worker up (model_test runs it as pid 1 of a PID namespace of its
// own) and finds its claim's lease run out, so it recovers the claim as crashed. It delivers
// nothing: it subscribes the consumer to a topic no event has, with the options the file records
// for the consumer (derived, as model_test derives them, from the sequence's seed), and drains
// once at the time it is given (the model's manual clock).
//
//   model_stall_recoverer PATH CONSUMER NOW_MS SEED
//
// Exits 0 after the drain, 3 if a handler was called (it must never be), 2 on a usage error,
// 1 on an engine error (printed).
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "sequence_config.hpp"
#include "sluice/sluice.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: model_stall_recoverer PATH CONSUMER NOW_MS SEED\n";
    return 2;
  }
  try {
    auto clock = std::make_shared<sluice::ManualClock>();
    clock->set(sluice::TimePoint(sluice::Duration(std::atoll(argv[3]))));
    sluice::Options options;
    options.clock = clock;
    options.synchronous = sluice::Synchronous::kNormal;
    // The sequence's configuration: the seams draw does not depend on the extension (`sql`).
    const sluice::model::SequenceConfig config =
        sluice::model::make_config(std::strtoull(argv[4], nullptr, 10), true, true);
    options.retry = config.retry;
    const sluice::model::ConsumerConfig& recorded = config.consumer(argv[2]);
    sluice::ConsumerOptions consumer;
    consumer.ordered = recorded.ordered;
    consumer.mode = recorded.outside ? sluice::DeliveryMode::kOutsideTransaction
                                     : sluice::DeliveryMode::kInTransaction;
    sluice::Worker worker(argv[1], options);
    worker.subscribe(
        argv[2], "model.stall-watch",
        [](const sluice::Event& event, sluice::Context&) {
          std::cerr << "model_stall_recoverer: called with event " << event.id << "\n";
          std::_Exit(3);
        },
        consumer);
    worker.run_until_idle();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "model_stall_recoverer: " << e.what() << "\n";
    return 1;
  }
}
