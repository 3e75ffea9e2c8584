#include "sequence_config.hpp"

#include <stdexcept>

#include "random.hpp"

namespace sluice::model {

bool InstanceConfig::handles_topic(const std::string& consumer, const std::string& topic) const {
  const auto found = handles.find(consumer);
  return found != handles.end() && found->second.count(topic) > 0;
}

const ConsumerConfig& SequenceConfig::consumer(const std::string& name) const {
  for (const ConsumerConfig& c : consumers) {
    if (c.name == name) return c;
  }
  throw std::logic_error("model: no consumer " + name);
}

SequenceConfig make_config(std::uint64_t seed, bool allow_seams, bool sql, bool breakers) {
  Rng rng(mix(seed ^ 0xc0f1));
  SequenceConfig config;
  config.seed = seed;
  // Drawn apart from `rng`, so that the other sequences keep the configuration they had.
  config.seams = allow_seams && mix(seed ^ 0x5ea3) % 3 == 0;
  config.lease_fallback = config.seams ? mix(seed ^ 0x1ea5) % 4 == 0 : mix(seed ^ 0x57a11) % 5 == 0;
  config.topics = {"t0", "t1", "t2"};
  const int consumers = 2 + rng.below(2);
  for (int c = 0; c < consumers; ++c) {
    ConsumerConfig consumer;
    consumer.name = "c" + std::to_string(c);
    for (const std::string& topic : config.topics) {
      if (rng.chance(60)) consumer.topics.push_back(topic);
    }
    if (consumer.topics.empty()) consumer.topics.push_back(config.topics[rng.below(3)]);
    consumer.ordered = rng.chance(60);
    consumer.outside = rng.chance(40);
    // A seam sequence's first consumer is one SQL can drive.
    if (config.seams && c == 0) consumer.ordered = consumer.outside = false;
    consumer.no_snooze = config.seams && sql && !consumer.ordered && !consumer.outside;
    if (consumer.outside) {
      for (const std::string& topic : consumer.topics) {
        if (rng.chance(50)) consumer.batch_topics.insert(topic);
      }
    }
    // Drawn apart from `rng`, so that the other sequences keep the configuration they had.
    consumer.shared_batch_handler = mix(seed ^ (0x5ba7c4 + static_cast<std::uint64_t>(c))) % 2 == 0;
    // A breaker that opens after 1-3 transient failures in a row, for 1-4 s, doubling up to 4
    // times that; drawn apart from `rng` too.
    const std::uint64_t b = mix(seed ^ (0xb4ea7e + static_cast<std::uint64_t>(c)));
    if (breakers && consumer.outside && !config.seams && !config.lease_fallback && b % 2 == 0) {
      const Duration cool_down = std::chrono::seconds(1 + static_cast<int>((b >> 8) % 4));
      consumer.breaker = Breaker{1 + static_cast<int>((b >> 4) % 3), cool_down, cool_down * 4};
    }
    config.consumers.push_back(std::move(consumer));
  }
  InstanceConfig full;
  for (const ConsumerConfig& c : config.consumers)
    full.handles[c.name] = std::set<std::string>(c.topics.begin(), c.topics.end());
  config.instances.push_back(full);
  if (config.seams) {
    InstanceConfig c_api = full;
    c_api.kind = InstanceKind::kC;
    config.instances.push_back(c_api);
    if (sql) {
      InstanceConfig sql_instance;
      sql_instance.kind = InstanceKind::kSql;
      for (const ConsumerConfig& c : config.consumers) {
        if (c.no_snooze) sql_instance.handles[c.name] = full.handles[c.name];
      }
      config.instances.push_back(sql_instance);
    }
  }
  // A rolling deploy: the old instance lacks the handler of one topic of a consumer.
  if (rng.chance(35)) {
    InstanceConfig old = full;
    for (const ConsumerConfig& c : config.consumers) {
      if (c.topics.size() < 2) continue;
      old.handles[c.name].erase(c.topics[rng.below(static_cast<int>(c.topics.size()))]);
      config.instances.push_back(old);
      break;
    }
  }
  const int batch_sizes[] = {1, 2, 3, 5, 8, 64, 512};
  config.batch_size = batch_sizes[rng.below(7)];
  const Duration budgets[] = {Duration(0), Duration(50), std::chrono::hours(1)};
  config.batch_time_budget = budgets[rng.below(3)];
  config.retry.max_attempts = 2 + rng.below(3);
  config.retry.initial_backoff = std::chrono::seconds(1);
  config.retry.multiplier = 2.0;
  config.retry.max_backoff = std::chrono::seconds(8);
  config.retry.jitter = 0.2;
  config.retry.seed = seed;
  if (config.seams) {
    // What the C API instances can be given: the defaults but max_attempts and the backoff's
    // bounds (SQL instances can be given every field).
    const RetryPolicy defaults;
    config.retry.multiplier = defaults.multiplier;
    config.retry.jitter = defaults.jitter;
    config.retry.seed = defaults.seed;
  }
  return config;
}

std::string describe(const SequenceConfig& config) {
  std::string out = std::string(config.seams ? "seams (real time) " : "") +
                    (config.lease_fallback ? "lease fallback " : "") +
                    "batch_size=" + std::to_string(config.batch_size) +
                    " batch_time_budget=" + std::to_string(config.batch_time_budget.count()) +
                    "ms max_attempts=" + std::to_string(config.retry.max_attempts) + "\n";
  for (const ConsumerConfig& c : config.consumers) {
    out += "  consumer " + c.name + (c.ordered ? " ordered" : " unordered") +
           (c.no_snooze ? " no-snooze" : "") + (c.outside ? " outside" : " in-transaction") +
           (c.breaker ? " breaker(" + std::to_string(c.breaker->failures) + " failures, " +
                            std::to_string(c.breaker->cool_down.count()) + "ms)"
                      : std::string()) +
           " topics:";
    for (const std::string& t : c.topics)
      out += " " + t +
             (c.batch_topics.count(t) == 0 ? ""
              : c.shared_batch_handler     ? "(shared batch)"
                                           : "(batch)");
    out += "\n";
  }
  for (std::size_t i = 0; i < config.instances.size(); ++i) {
    const InstanceKind kind = config.instances[i].kind;
    out += "  instance " + std::to_string(i) +
           (kind == InstanceKind::kCpp ? " (C++)"
            : kind == InstanceKind::kC ? " (C API)"
                                       : " (SQL)") +
           " handles:";
    for (const auto& [consumer, topics] : config.instances[i].handles) {
      out += " " + consumer + "{";
      for (const std::string& t : topics) out += " " + t;
      out += " }";
    }
    out += "\n";
  }
  return out;
}

}  // namespace sluice::model
