// The engine set-up of one model sequence (consumers, worker instances, batch options), derived
// from the sequence's seed alone.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sluice/options.hpp"

namespace sluice::model {

struct ConsumerConfig {
  std::string name;
  std::vector<std::string> topics;
  bool ordered = false;
  bool outside = false;
  // Topics this (outside) consumer takes through subscribe_batch rather than subscribe.
  std::set<std::string> batch_topics;
};

// One Worker object: the topics it has handlers for, per consumer. Two instances with different
// sets for one consumer are a rolling deploy.
struct InstanceConfig {
  std::map<std::string, std::set<std::string>> handles;
  bool handles_topic(const std::string& consumer, const std::string& topic) const;
};

struct SequenceConfig {
  std::uint64_t seed = 0;
  std::vector<std::string> topics;
  std::vector<ConsumerConfig> consumers;
  std::vector<InstanceConfig> instances;
  int batch_size = 512;
  Duration batch_time_budget{50};
  RetryPolicy retry;

  const ConsumerConfig& consumer(const std::string& name) const;
};

// The configuration of sequence `seed`: 2-3 consumers over 3 topics (fan-out), ordered or not,
// in or outside the transaction, batch handlers, batch size 1..512, a time budget of 0, the
// default or an hour, and in some sequences a second instance lacking one topic's handler.
SequenceConfig make_config(std::uint64_t seed);

// One line per consumer and instance, for a failure report.
std::string describe(const SequenceConfig& config);

}  // namespace sluice::model
