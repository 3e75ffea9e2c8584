// A sluice pipeline set up for measuring: a producer connection with its Outbox, and a worker
// whose consumers each write one domain row per event.
#pragma once

#include <SQLiteCpp/Database.h>

#include <memory>
#include <string>
#include <vector>

#include "domain_writer.hpp"
#include "sluice/outbox.hpp"
#include "sluice/worker.hpp"
#include "storage.hpp"

namespace bench {

// Not thread-safe, apart from what Worker allows. Stop a started worker (worker().stop()) before
// the rig is destroyed.
class DeliveryRig {
 public:
  // `consumers` consumers named bench-0.. subscribe to kTopic. For memory storage the worker
  // uses the producer's connection and can only run_until_idle().
  DeliveryRig(const std::string& path, const Storage& storage, const sluice::Options& options,
              int consumers, Failures failures = {});
  ~DeliveryRig();

  // Enqueues `events` events, 1000 per transaction.
  void enqueue_backlog(long long events);

  SQLite::Database& producer() { return *producer_; }
  sluice::Outbox& outbox() { return *outbox_; }
  sluice::Worker& worker() { return *worker_; }
  long long written() const;
  // The first consumer's handler.
  DomainWriter& writer() { return *writers_.front(); }

 private:
  std::unique_ptr<SQLite::Database> producer_;
  std::unique_ptr<sluice::Outbox> outbox_;
  std::unique_ptr<sluice::Worker> worker_;
  // Declared after worker_ so that their statements go before the worker's connection.
  std::vector<std::unique_ptr<DomainWriter>> writers_;
  std::vector<std::string> payloads_;
  long long enqueued_ = 0;
};

}  // namespace bench
