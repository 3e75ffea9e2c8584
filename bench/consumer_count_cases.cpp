#include "consumer_count_cases.hpp"

#include <SQLiteCpp/Statement.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <vector>

#include "domain_writer.hpp"
#include "sluice/database.hpp"
#include "sluice/outbox.hpp"
#include "sluice/worker.hpp"
#include "stopwatch.hpp"
#include "workload.hpp"

namespace bench {
namespace {

// Issue 16: 100 consumers with one event each per round cost at most 2x per event what one does.
constexpr double kTarget = 0.5;
constexpr int kManyConsumers = 100;

void run_statement(SQLite::Statement& statement) {
  statement.exec();
  statement.reset();
}

// Deliveries per second when each of `consumers` consumers, each of a topic of its own, gets one
// event per round: one transaction enqueues an event per topic, then run_until_idle() delivers
// them; only run_until_idle() is timed. `rounds` rounds.
double rounds_of_one_each(const std::string& path, const Storage& storage, int consumers,
                          long long rounds) {
  const sluice::Options options = storage.options();
  SQLite::Database producer = sluice::open_database(path, options);
  producer.exec(kDomainSchema);
  sluice::Outbox outbox(producer, options);
  sluice::Worker worker(path, options);
  // Destroyed before the worker, whose connection their statements were prepared on.
  std::vector<std::unique_ptr<DomainWriter>> writers;
  for (int i = 0; i < consumers; ++i) {
    writers.push_back(std::make_unique<DomainWriter>());
    worker.subscribe("bench-" + std::to_string(i), "topic-" + std::to_string(i),
                     writers.back()->handler());
  }
  SQLite::Statement begin(producer, "BEGIN IMMEDIATE");
  SQLite::Statement commit(producer, "COMMIT");
  const std::vector<std::string> payloads = sample_payloads();
  sluice::NewEvent event;
  double seconds = 0;
  long long delivered = 0;
  for (long long round = 0; round < rounds; ++round) {
    run_statement(begin);
    for (int i = 0; i < consumers; ++i) {
      event.topic = "topic-" + std::to_string(i);
      event.payload = payloads[(round * consumers + i) % payloads.size()];
      outbox.enqueue(event);
    }
    run_statement(commit);
    Stopwatch stopwatch;
    delivered += worker.run_until_idle().delivered;
    seconds += stopwatch.unstolen_seconds();
  }
  if (delivered != rounds * consumers) {
    throw std::runtime_error("bench: consumer count case delivered " + std::to_string(delivered) +
                             " of " + std::to_string(rounds * consumers));
  }
  return delivered / seconds;
}

}  // namespace

void run_consumer_count_cases(Run& run) {
  const Storage storage = file_storage(sluice::Synchronous::kNormal);
  const std::string name = "sluice deliver 100 consumers 1 event each per round " + storage.name;
  if (!run.wants(name)) return;
  run.guarded(name, [&] {
    const long long rounds = run.size(30, 2);
    double one = 0;
    double many = 0;
    // The best of alternating measurements, each on a fresh file, as for the floor pairs.
    for (int round = 0; round < run.rounds(); ++round) {
      std::string path = run.scratch().fresh_database("one-consumer", storage);
      one = std::max(one, rounds_of_one_each(path, storage, 1, rounds * kManyConsumers));
      ScratchDir::remove_database(path);
      path = run.scratch().fresh_database("many-consumers", storage);
      many = std::max(many, rounds_of_one_each(path, storage, kManyConsumers, rounds));
      ScratchDir::remove_database(path);
    }
    Result result;
    result.name = name;
    result.events = rounds * kManyConsumers;
    result.events_per_s = many;
    result.floor_events_per_s = one;
    result.ratio = many / one;
    char text[32];
    std::snprintf(text, sizeof text, "ratio >= %.2f", kTarget);
    result.target = text;
    result.met = *result.ratio >= kTarget;
    run.add(result);
  });
}

}  // namespace bench
