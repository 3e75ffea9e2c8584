#include "broker_return.hpp"

#include "../log_to.hpp"
#include "../snoozed_deliveries.hpp"
#include "sluice/database.hpp"

namespace sluice::nats {

BrokerReturn::BrokerReturn(std::string path, std::string consumer, Options options)
    : path_(std::move(path)), consumer_(std::move(consumer)), options_(std::move(options)) {}

void BrokerReturn::connected() {
  count_.fetch_add(1);
  try {
    SQLite::Database db = open_database(path_, options_);
    const long long due = make_snoozed_due(db, consumer_, options_.clock->now());
    if (due > 0)
      log_to(options_, LogLevel::kInfo, "relay: broker reachable again, snoozed events due now",
             {{"consumer", consumer_}, {"events", due}});
  } catch (const std::exception& e) {
    // They stay snoozed: tried again when their backoff ends.
    log_to(options_, LogLevel::kWarn, "relay: broker reachable again, but snoozed events stay",
           {{"consumer", consumer_}, {"error", e.what()}});
  }
}

}  // namespace sluice::nats
