#include "invariants.hpp"

#include <SQLiteCpp/Statement.h>

#include <map>
#include <set>

#include "sluice/dead_letters.hpp"
#include "sluice/inspect.hpp"
#include "sluice/stats.hpp"

namespace sluice::model {
namespace {

std::string who(const ModelEvent& event, const std::string& consumer) {
  return consumer + " n=" + std::to_string(event.n) + " seq=" + std::to_string(event.seq) + " " +
         event.topic + (event.key.empty() ? "" : " key " + event.key);
}

bool no_handler_error(const std::string& error) {
  return error.find("no handler") != std::string::npos;
}

}  // namespace

void check_dead_letters(SQLite::Database& db, const ReferenceModel& model,
                        std::vector<Violation>& out) {
  std::map<std::pair<std::string, std::string>, DeadLetter> engine;
  for (DeadLetter& letter : list_dead_letters(db, {}))
    engine[{letter.consumer, letter.event_id}] = std::move(letter);
  for (const auto& [_, event] : model.events()) {
    if (event.pruned) continue;  // its ID may belong to a later event now
    for (const auto& [consumer, pair] : event.pairs) {
      const auto found = engine.find({consumer, event.id});
      if (pair.state != PairState::kDead) {
        if (found == engine.end()) continue;
        const DeadLetter& letter = found->second;
        out.push_back({no_handler_error(letter.last_error) ? "dead letter for want of a handler"
                                                           : "dead-letter set",
                       who(event, consumer) + " is a dead letter (" + letter.reason + ", " +
                           std::to_string(letter.attempts) + " attempts: " + letter.last_error +
                           ") but the model has it " +
                           (pair.state == PairState::kPending
                                ? "pending (" + std::string(name(pair.cause)) + ")"
                            : pair.state == PairState::kDelivered ? "delivered"
                                                                  : "discarded")});
        engine.erase(found);
        continue;
      }
      if (found == engine.end()) {
        out.push_back({"dead-letter set", who(event, consumer) + " is dead in the model (" +
                                              pair.dead_reason + ") but not a dead letter"});
        continue;
      }
      const DeadLetter& letter = found->second;
      if (letter.reason != pair.dead_reason || letter.attempts != pair.attempts) {
        out.push_back({"dead-letter set", who(event, consumer) + " is dead as " + letter.reason +
                                              " after " + std::to_string(letter.attempts) +
                                              " attempts; the model says " + pair.dead_reason +
                                              " after " + std::to_string(pair.attempts)});
      }
      engine.erase(found);
    }
  }
  for (const auto& [key, letter] : engine) {
    out.push_back({"dead-letter set", "unknown dead letter " + key.first + " " + key.second});
  }
}

void check_ledger(SQLite::Database& db, const ReferenceModel& model, const SequenceConfig& config,
                  std::vector<Violation>& out) {
  std::map<std::pair<std::string, long long>, long long> applied;
  SQLite::Statement rows(db, "SELECT consumer, n, count(*) FROM model_applied GROUP BY 1, 2");
  while (rows.executeStep())
    applied[{rows.getColumn(0).getString(), rows.getColumn(1).getInt64()}] =
        rows.getColumn(2).getInt64();
  for (const auto& [n, event] : model.events()) {
    for (const auto& [consumer, pair] : event.pairs) {
      if (config.consumer(consumer).outside) continue;
      const auto found = applied.find({consumer, n});
      const long long count = found == applied.end() ? 0 : found->second;
      if (found != applied.end()) applied.erase(found);
      if (count == pair.delivered) continue;
      out.push_back({count > pair.delivered ? "applied twice (in-transaction)"
                                            : "applied write lost (in-transaction)",
                     who(event, consumer) + " has " + std::to_string(count) +
                         " row(s) in the app table; the model delivered it " +
                         std::to_string(pair.delivered) + " time(s)"});
    }
  }
  for (const auto& [key, count] : applied) {
    out.push_back({"applied twice (in-transaction)",
                   key.first + " n=" + std::to_string(key.second) + " applied " +
                       std::to_string(count) + " time(s) but never delivered in the model"});
  }
}

void check_stats(SQLite::Database& db, const ReferenceModel& model, const SequenceConfig& config,
                 const Options& options, std::vector<Violation>& out) {
  struct Expected {
    long long pending = 0;
    long long dead = 0;
    std::set<std::string> parked;
  };
  std::map<std::string, Expected> expected;
  for (const auto& [_, event] : model.events()) {
    for (const auto& [consumer, pair] : event.pairs) {
      Expected& e = expected[consumer];
      if (pair.state == PairState::kPending) ++e.pending;
      if (pair.state == PairState::kDead) {
        ++e.dead;
        if (!event.key.empty() && config.consumer(consumer).ordered) e.parked.insert(event.key);
      }
    }
  }
  for (const ConsumerStats& stats : consumer_stats(db, options)) {
    const Expected& e = expected[stats.consumer];
    const ReferenceModel::Totals& totals = model.totals().at(stats.consumer);
    std::string wrong;
    auto compare = [&](const char* field, long long engine, long long model_value) {
      if (engine != model_value)
        wrong += std::string(" ") + field + " " + std::to_string(engine) + " (model " +
                 std::to_string(model_value) + ")";
    };
    compare("pending", stats.pending, e.pending);
    compare("claimed", stats.claimed, 0);
    compare("dead", stats.dead, e.dead);
    compare("delivered_total", stats.delivered_total, totals.delivered);
    compare("retries_total", stats.retries_total, totals.retries);
    compare("parked_keys", stats.parked_keys, static_cast<long long>(e.parked.size()));
    compare("throttled_total", stats.throttled_total, totals.throttled);
    // On real time a throttle's end is known only within the model's slack.
    if (!config.seams) {
      compare("paused", stats.paused ? 1 : 0,
              model.paused_at(stats.consumer, options.clock->now()) ? 1 : 0);
    }
    const ReferenceModel::BreakerModel breaker = model.breaker(stats.consumer);
    const std::string breaker_name =
        breaker.name(config.consumer(stats.consumer).breaker.has_value(), options.clock->now());
    if (stats.breaker != breaker_name)
      wrong += " breaker " + stats.breaker + " (model " + breaker_name + ")";
    if (stats.breaker != "off") {
      compare("breaker_failures", stats.breaker_failures, breaker.consecutive);
      compare("breaker_open_until",
              stats.breaker_open_until ? stats.breaker_open_until->time_since_epoch().count() : -1,
              breaker.open_until ? breaker.open_until->time_since_epoch().count() : -1);
    }
    if (!wrong.empty()) out.push_back({"consumer_stats", stats.consumer + ":" + wrong});
  }
}

void check_drained(SQLite::Database& db, const ReferenceModel& model,
                   const InstanceConfig& instance, TimePoint now, std::vector<Violation>& out) {
  for (const DuePair& due : model.due(instance, now)) {
    if (!due.must_run) continue;
    const Pair& pair = *due.pair;
    std::string invariant =
        "due but not delivered after run_until_idle (" + std::string(name(pair.cause)) + ")";
    std::string file = "no delivery row";
    for (const DeliveryStatus& status : delivery_statuses(db, find_event(db, due.event->id))) {
      if (status.consumer != due.consumer) continue;
      file = status.state;
      if (status.next_attempt_at) {
        const long long ahead = (*status.next_attempt_at - now).count();
        file += ", next attempt in " + std::to_string(ahead) + " ms";
        if (ahead > 0 && pair.clock_back_while_pending)
          invariant = "stranded: waits for a clock set back to catch up";
      }
    }
    out.push_back(
        {invariant, who(*due.event, due.consumer) + " is due (" + name(pair.cause) + ", attempts " +
                        std::to_string(pair.attempts) +
                        ") and nothing earlier of its key holds it back; the file: " + file});
  }
}

void check_unhandled_attempts(SQLite::Database& db, const ReferenceModel& model,
                              const SequenceConfig& config, std::vector<Violation>& out) {
  if (config.instances.size() < 2) return;
  for (const auto& [_, event] : model.events()) {
    if (event.pruned) continue;
    for (const auto& [consumer, pair] : event.pairs) {
      bool everywhere = true;
      for (const InstanceConfig& instance : config.instances)
        everywhere = everywhere && instance.handles_topic(consumer, event.topic);
      if (everywhere || pair.state != PairState::kPending) continue;
      for (const DeliveryStatus& status : delivery_statuses(db, find_event(db, event.id))) {
        if (status.consumer != consumer || status.attempts <= pair.attempts) continue;
        out.push_back({"attempt spent without a handler",
                       who(event, consumer) + " has " + std::to_string(status.attempts) +
                           " attempts in the file, the model " + std::to_string(pair.attempts) +
                           " (" + status.last_error + ")"});
      }
    }
  }
}

}  // namespace sluice::model
