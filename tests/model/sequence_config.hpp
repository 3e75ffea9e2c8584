// The engine set-up of one model sequence (consumers, worker instances, batch options), derived
// from the sequence's seed alone.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sluice/consumer.hpp"
#include "sluice/options.hpp"

namespace sluice::model {

struct ConsumerConfig {
  std::string name;
  std::vector<std::string> topics;
  bool ordered = false;
  bool outside = false;
  // Its handlers never snooze: an SQL instance drives it.
  bool no_snooze = false;
  // Subscribed with StartFrom::kOldest (only once added again: a first subscription is kNow).
  bool oldest = false;
  // How often it was removed and added again: a handler subscribed for an earlier generation
  // must never be called.
  int generation = 0;
  // Topics this (outside) consumer takes through subscribe_batch rather than subscribe.
  std::set<std::string> batch_topics;
  // Its batch topics take one handler together (subscribe_batch_topics), so its
  // batches hold events of several topics.
  bool shared_batch_handler = false;
  // Its circuit breaker (ConsumerOptions::breaker): outside consumers of sequences on the
  // manual clock with one worker at a time, where the model knows which call opens it.
  std::optional<Breaker> breaker;
};

// What drives an instance: a C++ Worker, a C API sluice_worker, or a sqlite3 connection with the
// loadable extension calling sluice_claim / sluice_done / sluice_fail (SQL consumers).
enum class InstanceKind { kCpp, kC, kSql };

// One worker instance: the topics it has handlers for, per consumer. Two instances with different
// sets for one consumer are a rolling deploy.
struct InstanceConfig {
  InstanceKind kind = InstanceKind::kCpp;
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
  // A sequence across the seams: C API and SQL instances beside C++ ones. Those read the system
  // clock, so the whole sequence runs on real time (clock steps do nothing) with the retry policy
  // they can be given (RetryPolicy's defaults but max_attempts and the backoff's bounds, all a C
  // API instance can set), and a consumer an SQL instance drives never snoozes (SQL cannot).
  bool seams = false;
  // Whether a worker instance that is not made to subscribe a consumer added again keeps the
  // handlers of its removed self (they must deliver nothing more), or subscribes it anew too.
  // Not drawn from the seed: model_test's --no-stale-workers sets it.
  bool stale_workers = true;
  // A seam sequence in one in four, and another sequence in one in five (a stall sequence: its
  // workers' claim_lease is an hour of the manual clock, which the lease keeper, renewing on real
  // time, never reaches in a run): a directory where the lock file "<db>-sluice-lock" would be,
  // so that every worker and SQL connection falls back to its process identity and a lease
  // (README, "A process that dies mid-delivery").
  bool lease_fallback = false;

  const ConsumerConfig& consumer(const std::string& name) const;
};

// The configuration of sequence `seed`: 2-3 consumers over 3 topics (fan-out), ordered or not,
// in or outside the transaction, batch handlers, batch size 1..512, a time budget of 0, the
// default or an hour, and in some sequences a second instance lacking one topic's handler. With
// `allow_seams`, one sequence in three, a seam sequence: a C API instance beside the C++ one and,
// if `sql` (the extension can be loaded), an SQL instance for the unordered in-transaction
// consumers. With `breakers`, one outside consumer in two of a sequence that is neither a seam
// nor a stall sequence has a circuit breaker.
SequenceConfig make_config(std::uint64_t seed, bool allow_seams, bool sql, bool breakers = true);

// One line per consumer and instance, for a failure report.
std::string describe(const SequenceConfig& config);

}  // namespace sluice::model
