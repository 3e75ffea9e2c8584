#include "delivery_rig.hpp"

#include <SQLiteCpp/Statement.h>

#include "sluice/database.hpp"
#include "workload.hpp"

namespace bench {
namespace {

void run(SQLite::Statement& statement) {
  statement.exec();
  statement.reset();
}

}  // namespace

DeliveryRig::DeliveryRig(const std::string& path, const Storage& storage,
                         const sluice::Options& options, int consumers, Failures failures)
    : producer_(new SQLite::Database(sluice::open_database(path, options))),
      outbox_(std::make_unique<sluice::Outbox>(*producer_, options)),
      payloads_(sample_payloads()) {
  producer_->exec(kDomainSchema);
  worker_ = storage.in_memory ? std::make_unique<sluice::Worker>(*producer_, options)
                              : std::make_unique<sluice::Worker>(path, options);
  for (int i = 0; i < consumers; ++i) {
    writers_.push_back(std::make_unique<DomainWriter>(failures));
    worker_->subscribe("bench-" + std::to_string(i), kTopic, writers_.back()->handler());
  }
}

DeliveryRig::~DeliveryRig() = default;

void DeliveryRig::enqueue_backlog(long long events) {
  SQLite::Statement begin(*producer_, "BEGIN IMMEDIATE");
  SQLite::Statement commit(*producer_, "COMMIT");
  sluice::NewEvent event;
  event.topic = kTopic;
  for (long long n = 0; n < events; ++n) {
    if (n % 1000 == 0) run(begin);
    event.payload = payloads_[(enqueued_ + n) % payloads_.size()];
    outbox_->enqueue(event);
    if ((n + 1) % 1000 == 0 || n + 1 == events) run(commit);
  }
  enqueued_ += events;
}

long long DeliveryRig::written() const {
  long long total = 0;
  for (const auto& writer : writers_) total += writer->written();
  return total;
}

}  // namespace bench
