#include "reference_model.hpp"

#include <algorithm>
#include <stdexcept>

namespace sluice::model {

const char* name(Cause cause) {
  switch (cause) {
    case Cause::kFresh:
      return "fresh event";
    case Cause::kRetry:
      return "retry";
    case Cause::kSnooze:
      return "snooze";
    case Cause::kReplayed:
      return "replayed dead letter";
    case Cause::kBackfilled:
      return "backfilled";
    case Cause::kBackfilledInFlight:
      return "backfilled while in flight";
    case Cause::kHeldInBatch:
      return "handled in a batch after a failure of its key";
    case Cause::kCrashed:
      return "claim recovered as crashed";
  }
  return "?";
}

namespace {

std::string describe(const ModelEvent& e) {
  return "n=" + std::to_string(e.n) + " seq=" + std::to_string(e.seq) + " " + e.topic +
         (e.key.empty() ? "" : " key " + e.key);
}

const char* state_name(PairState s) {
  switch (s) {
    case PairState::kPending:
      return "pending";
    case PairState::kDead:
      return "dead";
    case PairState::kDelivered:
      return "delivered";
    case PairState::kDiscarded:
      return "discarded";
    case PairState::kRemoved:
      return "removed with its consumer";
  }
  return "?";
}

bool unfinished(const Pair& p) {
  return p.state == PairState::kPending || p.state == PairState::kDead;
}

void reset_to_pending(Pair& p, Cause cause) {
  p.state = PairState::kPending;
  p.attempts = 0;
  p.snoozes = 0;
  p.probes = 0;
  ++p.resets;
  p.earliest = TimePoint::min();
  p.latest = TimePoint::min();
  p.scheduled_at.reset();
  p.cause = cause;
  p.clock_back_while_pending = false;
}

}  // namespace

ReferenceModel::ReferenceModel(const SequenceConfig& config)
    : config_(config), slack_(config.seams ? Duration(250) : Duration(0)) {
  for (const ConsumerConfig& c : config.consumers) totals_[c.name];
}

EnqueueResult ReferenceModel::expect_enqueue(const NewEvent& event, long long n, TimePoint now) {
  for (const auto& [_, e] : events_) {
    if (e.pruned) continue;
    if (!event.id.empty() && e.id == event.id)
      return {EnqueueResult::Status::kDuplicateId, e.id, e.seq};
  }
  for (const auto& [_, e] : events_) {
    if (e.pruned) continue;
    if (!event.dedup_key.empty() && e.topic == event.topic && e.dedup_key == event.dedup_key)
      return {EnqueueResult::Status::kDuplicateDedupKey, e.id, e.seq};
  }
  ModelEvent stored;
  stored.n = n;
  stored.seq = 0;
  stored.id = event.id;
  stored.topic = event.topic;
  stored.key = event.key;
  stored.dedup_key = event.dedup_key;
  stored.created_at = now;
  stored.not_before = event.not_before;
  for (const ConsumerConfig& c : config_.consumers) {
    if (std::find(c.topics.begin(), c.topics.end(), event.topic) == c.topics.end()) continue;
    Pair& pair = stored.pairs[c.name];
    if (event.not_before) pair.earliest = pair.latest = *event.not_before;
  }
  tentative_.push_back(n);
  const EnqueueResult result{EnqueueResult::Status::kStored, stored.id, stored.seq};
  events_.emplace(n, std::move(stored));
  return result;
}

void ReferenceModel::stored(long long n, const std::string& id, std::int64_t seq) {
  ModelEvent& event = events_.at(n);
  event.id = id;
  event.seq = seq;
  last_seq_ = seq;
}

void ReferenceModel::begin_transaction() {
  tentative_.clear();
  seq_at_begin_ = last_seq_;
}

void ReferenceModel::rollback_transaction() {
  for (long long n : tentative_) events_.erase(n);
  tentative_.clear();
  last_seq_ = seq_at_begin_;
}

ModelEvent* ReferenceModel::find(long long n) {
  const auto found = events_.find(n);
  return found == events_.end() ? nullptr : &found->second;
}

CallKey ReferenceModel::call_key(const std::string& consumer, const ModelEvent& event,
                                 const Pair& pair) const {
  return {consumer, event.n, pair.attempts + 1, pair.snoozes, pair.resets, pair.probes};
}

Scripted ReferenceModel::outcome_of(const std::string& consumer, const ModelEvent& event) const {
  const Scripted scripted =
      scripted_outcome(config_.seed, call_key(consumer, event, event.pairs.at(consumer)));
  if (scripted.action == Action::kSnooze && config_.consumer(consumer).no_snooze) return {};
  return scripted;
}

Scripted ReferenceModel::peek_outcome(const std::string& consumer, long long n) const {
  return outcome_of(consumer, events_.at(n));
}

const ModelEvent* ReferenceModel::unfinished_before(const ModelEvent& event,
                                                    const std::string& consumer,
                                                    const std::set<long long>& except) const {
  if (event.key.empty() || !config_.consumer(consumer).ordered) return nullptr;
  for (const auto& [n, earlier] : events_) {
    if (n >= event.n) break;
    if (earlier.key != event.key || except.count(n) > 0) continue;
    const auto pair = earlier.pairs.find(consumer);
    if (pair != earlier.pairs.end() && unfinished(pair->second)) return &earlier;
  }
  return nullptr;
}

std::vector<ModelEvent*> ReferenceModel::called_events(const std::string& consumer,
                                                       const std::vector<long long>& ns,
                                                       std::vector<Violation>& out) {
  std::vector<ModelEvent*> events;
  for (long long n : ns) {
    ModelEvent* event = find(n);
    if (event == nullptr || event->pairs.count(consumer) == 0) {
      out.push_back({"call of an event the consumer does not take",
                     consumer + " was called with n=" + std::to_string(n)});
      return {};
    }
    events.push_back(event);
  }
  return events;
}

void ReferenceModel::judge_calls(const std::string& consumer,
                                 const std::vector<ModelEvent*>& events, int engine_attempt,
                                 TimePoint now, std::vector<Violation>& out) const {
  std::set<long long> in_call;
  for (const ModelEvent* event : events) in_call.insert(event->n);
  if (const auto pause = pauses_.find(consumer);
      pause != pauses_.end() && now < pause->second.ends) {
    out.push_back({"call while paused",
                   consumer + " was called with n=" + std::to_string(events.front()->n) +
                       " while " + (pause->second.by_operator ? "paused" : "throttled") + " for " +
                       (pause->second.ends == TimePoint::max()
                            ? std::string("as long as it is not resumed")
                            : std::to_string((pause->second.ends - now).count()) + " ms more")});
  }
  judge_breaker(consumer, events.size(), now, out);
  // Judged against the state before the call: a batch handler is handed a key's events together.
  for (const ModelEvent* event : events) {
    const Pair& pair = event->pairs.at(consumer);
    const std::string who = consumer + " " + describe(*event);
    if (pair.state != PairState::kPending) {
      out.push_back(
          {pair.state == PairState::kDelivered ? "second delivery" : "delivery of a finished pair",
           who + " was handled again while " + state_name(pair.state) + " (delivered " +
               std::to_string(pair.delivered) + " time(s) already)"});
    }
    if (event->not_before && now < *event->not_before) {
      out.push_back({"delivered before not_before",
                     who + " ran " + std::to_string((*event->not_before - now).count()) +
                         " ms before its not-before time (" + name(pair.cause) + ")"});
    } else if (now < pair.earliest) {
      out.push_back({"retry fired early", who + " ran " +
                                              std::to_string((pair.earliest - now).count()) +
                                              " ms before it was due (" + name(pair.cause) + ")"});
    }
    if (const ModelEvent* earlier = unfinished_before(*event, consumer, in_call)) {
      out.push_back({"per-key order", who + " was handled while the earlier " + describe(*earlier) +
                                          " was " + state_name(earlier->pairs.at(consumer).state) +
                                          " (" + name(earlier->pairs.at(consumer).cause) + ")"});
    }
    if (engine_attempt > 0 && engine_attempt != pair.attempts + 1) {
      out.push_back({"attempt count", who + " ran as attempt " + std::to_string(engine_attempt) +
                                          "; the model counts " +
                                          std::to_string(pair.attempts + 1)});
    }
  }
}

std::vector<Scripted> ReferenceModel::on_throttled_call(
    const std::string& consumer, const std::vector<long long>& ns, int engine_attempt, bool batch,
    TimePoint now, Duration delay, const std::string& reason, std::vector<Violation>& out) {
  const std::vector<ModelEvent*> events = called_events(consumer, ns, out);
  if (events.empty()) return std::vector<Scripted>(ns.size());
  judge_calls(consumer, events, engine_attempt, now, out);
  // A throttled probe leaves the breaker half-open with its probe out (no success, no failure).
  take_probe(consumer, now);
  Pause& pause = pauses_[consumer];
  const bool operator_pause = pause.by_operator && now < pause.ends;
  if (!operator_pause) {
    // On real time the engine reads its clock after the call: its pause may end that much later.
    pause.ends = delay > TimePoint::max() - now ? TimePoint::max() : now + delay;
    pause.latest_end = pause.ends;
    pause.by_operator = false;
  }
  // An ordered consumer's later events of a key in the call are held back behind the first
  // (blocked), as after any other outcome but a success: only the first of each key counts.
  std::set<std::string> keys;
  for (ModelEvent* event : events) {
    if (config_.consumer(consumer).ordered && !event->key.empty() &&
        !keys.insert(event->key).second) {
      continue;
    }
    ++totals_[consumer].throttled;
    // Given back due at once (the pause holds it, not its row): a wait of nothing that began
    // now, which a clock set back below now starts anew from there.
    Pair& pair = event->pairs.at(consumer);
    if (pair.state == PairState::kPending) {
      pair.earliest = pair.latest = now;
      pair.scheduled_at = now;
    }
  }
  release_claimed(consumer, now);
  Scripted throttle{Action::kThrottle, delay, reason, batch, false};
  return std::vector<Scripted>(ns.size(), throttle);
}

void ReferenceModel::paused(const std::string& consumer, TimePoint until) {
  pauses_[consumer] = {until, until, true};
}

void ReferenceModel::throttle_recorded_by(const std::string& consumer, TimePoint now,
                                          Duration delay) {
  const auto pause = pauses_.find(consumer);
  if (pause == pauses_.end() || pause->second.by_operator) return;
  const TimePoint latest = delay > TimePoint::max() - now ? TimePoint::max() : now + delay;
  pause->second.latest_end = std::max(pause->second.latest_end, latest);
}

void ReferenceModel::resumed(const std::string& consumer) { pauses_.erase(consumer); }

std::string ReferenceModel::BreakerModel::name(bool configured, TimePoint now) const {
  if (!configured) return "off";
  if (!open_until) return "closed";
  return probe || *open_until <= now ? "half-open" : "open";
}

ReferenceModel::BreakerModel ReferenceModel::breaker(const std::string& consumer) const {
  const auto found = breakers_.find(consumer);
  return found == breakers_.end() ? BreakerModel{} : found->second;
}

void ReferenceModel::judge_breaker(const std::string& consumer, std::size_t count, TimePoint now,
                                   std::vector<Violation>& out) const {
  const auto found = breakers_.find(consumer);
  if (found == breakers_.end() || !found->second.open_until) return;
  const BreakerModel& b = found->second;
  if (now < *b.open_until) {
    out.push_back({"call while breaker open", consumer + " was called with " +
                                                  std::to_string(count) + " event(s) " +
                                                  std::to_string((*b.open_until - now).count()) +
                                                  " ms before its breaker's cool-down ends" +
                                                  (b.probe ? " (its probe is out)" : "")});
  } else if (count > 1) {
    out.push_back({"more than the probe through a half-open breaker",
                   consumer + " was called with " + std::to_string(count) +
                       " events while its breaker was half-open"});
  }
}

bool ReferenceModel::take_probe(const std::string& consumer, TimePoint now) {
  const auto found = breakers_.find(consumer);
  if (found == breakers_.end() || !found->second.open_until || now < *found->second.open_until)
    return false;
  found->second.probe = true;
  found->second.open_until = now + found->second.open_for;
  return true;
}

void ReferenceModel::release_claimed(const std::string& consumer, TimePoint now) {
  for (auto& [_, event] : events_) {
    const auto pair = event.pairs.find(consumer);
    if (pair != event.pairs.end() && pair->second.state == PairState::kPending &&
        pair->second.earliest <= now) {
      pair->second.earliest = TimePoint::min();
    }
  }
}

void ReferenceModel::settle_breaker(const std::string& consumer, bool probe, bool success,
                                    long long trailing, TimePoint now) {
  const std::optional<Breaker>& breaker = config_.consumer(consumer).breaker;
  if (!breaker || (!success && trailing == 0)) return;
  BreakerModel& b = breakers_[consumer];
  if (probe && success && trailing == 0) {
    b = {};  // the probe succeeded: closed
    return;
  }
  const long long consecutive = trailing + (success ? 0 : b.consecutive);
  // Failures while it is open (another worker's claim, taken before it opened) only add up.
  const bool opens = trailing > 0 && (probe || (!b.open_until && consecutive >= breaker->failures));
  b.consecutive = consecutive;
  if (!opens) return;
  // A failed probe doubles the cool-down in force, up to the cap.
  b.open_for =
      std::max(probe ? std::min(b.open_for * 2, breaker->max_cool_down) : breaker->cool_down,
               breaker->cool_down);
  b.open_until = now + b.open_for;
  b.probe = false;
  ++breaker_openings_;
  release_claimed(consumer, now);
}

bool ReferenceModel::paused_at(const std::string& consumer, TimePoint now) const {
  const auto pause = pauses_.find(consumer);
  return pause != pauses_.end() && now < pause->second.ends;
}

std::vector<Scripted> ReferenceModel::on_calls(const std::string& consumer,
                                               const std::vector<long long>& ns, int engine_attempt,
                                               bool batch, TimePoint now,
                                               std::vector<Violation>& out,
                                               const void* connection) {
  const std::vector<ModelEvent*> events = called_events(consumer, ns, out);
  if (events.empty()) return std::vector<Scripted>(ns.size());
  judge_calls(consumer, events, engine_attempt, now, out);
  const bool probe = take_probe(consumer, now);
  std::vector<Scripted> outcomes;
  for (ModelEvent* event : events) outcomes.push_back(outcome_of(consumer, *event));
  if (batch &&
      batch_throws(config_.seed, call_key(consumer, *events[0], events[0]->pairs.at(consumer)))) {
    for (Scripted& o : outcomes)
      o = {Action::kThrowAfterWrite, Duration(0), "batch thrown (" + consumer + ")", true};
  }
  // An ordered consumer's key that failed earlier in this call holds back its later events: their
  // outcome, whatever it is, is not one in order, and they must come again after the failed one.
  std::set<std::string> failed_keys;
  const bool ordered = config_.consumer(consumer).ordered;
  bool success = false;
  long long trailing_failures = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    ModelEvent& event = *events[i];
    Pair& pair = event.pairs.at(consumer);
    if (pair.state != PairState::kPending) continue;  // reported above; nothing to apply
    if (ordered && !event.key.empty() && failed_keys.count(event.key) > 0) {
      pair.cause = Cause::kHeldInBatch;
      pair.earliest = pair.latest = TimePoint::min();
      pair.scheduled_at.reset();
      continue;
    }
    if (outcomes[i].action != Action::kOk) failed_keys.insert(event.key);
    if (connection != nullptr && outcomes[i].action == Action::kOk)
      uncommitted_[connection].push_back({event.n, consumer, pair});
    const bool transient = outcomes[i].fails() && !outcomes[i].permanent();
    if (outcomes[i].action == Action::kOk) {
      success = true;
      trailing_failures = 0;
    } else if (transient) {
      ++trailing_failures;
    }
    if (probe && transient) {
      // A failed probe spends no attempt: the event is due again at once, and the breaker,
      // open again, holds it back.
      ++pair.probes;
      pair.last_error = outcomes[i].error;
      pair.earliest = pair.latest = now;
      pair.scheduled_at = now;
      pair.cause = Cause::kRetry;
      pair.clock_back_while_pending = false;
      ++totals_[consumer].retries;
      continue;
    }
    apply(event, consumer, pair, outcomes[i], now);
  }
  settle_breaker(consumer, probe, success, trailing_failures, now);
  return outcomes;
}

void ReferenceModel::delivery_transaction_ended(const void* connection, bool committed) {
  const auto found = uncommitted_.find(connection);
  if (found == uncommitted_.end()) return;
  if (!committed) {
    for (auto undo = found->second.rbegin(); undo != found->second.rend(); ++undo) {
      events_.at(undo->n).pairs.at(undo->consumer) = undo->before;
      --totals_[undo->consumer].delivered;
    }
  }
  uncommitted_.erase(found);
}

void ReferenceModel::apply(const ModelEvent& event, const std::string& consumer, Pair& pair,
                           const Scripted& outcome, TimePoint now) {
  Totals& totals = totals_[consumer];
  pair.clock_back_while_pending = false;
  switch (outcome.action) {
    case Action::kOk:
      pair.state = PairState::kDelivered;
      ++pair.delivered;
      ++totals.delivered;
      return;
    case Action::kSnooze:
      ++pair.snoozes;
      pair.earliest = pair.latest =
          outcome.snooze > TimePoint::max() - now ? TimePoint::max() : now + outcome.snooze;
      if (pair.latest < TimePoint::max() - slack_) {
        pair.earliest -= slack_;
        pair.latest += slack_;
      }
      pair.scheduled_at = now;
      pair.cause = Cause::kSnooze;
      return;
    default:
      break;
  }
  ++pair.attempts;
  pair.snoozes = 0;
  pair.probes = 0;
  pair.last_error = outcome.error;
  if (outcome.permanent() || pair.attempts >= config_.retry.max_attempts) {
    pair.state = PairState::kDead;
    pair.dead_reason = outcome.permanent() ? "permanent" : "exhausted";
    return;
  }
  ++totals.retries;
  pair.earliest = pair.latest = now + config_.retry.backoff(pair.attempts, event.seq);
  pair.earliest -= slack_;
  pair.latest += slack_;
  pair.scheduled_at = now;
  pair.cause = Cause::kRetry;
}

void ReferenceModel::clock_seen_behind(TimePoint to, const std::set<std::string>* of) {
  for (auto& [_, event] : events_) {
    for (auto& [consumer, pair] : event.pairs) {
      if (pair.state != PairState::kPending) continue;
      pair.clock_back_while_pending = true;
      if (of != nullptr && of->count(consumer) == 0) continue;
      // A wait that began after `to` began in the future: it starts anew from `to`, and fires
      // at worst early (at once), never later than its full length from now.
      if (pair.scheduled_at && *pair.scheduled_at > to) {
        pair.latest = to + (pair.latest - *pair.scheduled_at);
        pair.earliest = to;
        pair.scheduled_at = to;
      }
    }
  }
}

void ReferenceModel::clock_maybe_seen_behind(TimePoint to) {
  for (auto& [_, event] : events_) {
    for (auto& [consumer, pair] : event.pairs) {
      // Either outcome is right: re-anchored (may fire from `to`) or not (the old latest holds).
      if (pair.state == PairState::kPending && pair.scheduled_at && *pair.scheduled_at > to)
        pair.earliest = std::min(pair.earliest, to);
    }
  }
}

void ReferenceModel::clock_stepped_mid_drain(TimePoint since, Duration step, bool recorded_late) {
  for (auto& [_, event] : events_) {
    for (auto& [consumer, pair] : event.pairs) {
      if (pair.state != PairState::kPending || !pair.scheduled_at || *pair.scheduled_at < since)
        continue;
      if (pair.latest < TimePoint::max() - step) pair.latest += step;
      // The engine may have recorded the wait's start at the later reading (an outside call's
      // outcome commits after the call): a clock set back below it may re-anchor the wait.
      if (recorded_late && *pair.scheduled_at < TimePoint::max() - step) *pair.scheduled_at += step;
    }
  }
}

long long ReferenceModel::replay(const DeadFilter& matches) {
  long long count = 0;
  for (auto& [_, event] : events_) {
    for (auto& [consumer, pair] : event.pairs) {
      if (pair.state != PairState::kDead || !matches(event, consumer, pair)) continue;
      reset_to_pending(pair, Cause::kReplayed);
      ++count;
    }
  }
  return count;
}

long long ReferenceModel::discard(const DeadFilter& matches) {
  long long count = 0;
  for (auto& [_, event] : events_) {
    for (auto& [consumer, pair] : event.pairs) {
      if (pair.state != PairState::kDead || !matches(event, consumer, pair)) continue;
      pair.state = PairState::kDiscarded;
      ++count;
    }
  }
  return count;
}

long long ReferenceModel::backfill(const std::string& consumer, std::int64_t from_seq,
                                   const std::set<long long>& in_flight) {
  long long count = 0;
  for (auto& [n, event] : events_) {
    if (event.pruned || event.seq < from_seq) continue;
    const auto found = event.pairs.find(consumer);
    if (found == event.pairs.end()) continue;
    Pair& pair = found->second;
    if (pair.state == PairState::kRemoved) {
      // Of the consumer's removed self: backfilled only if the consumer now subscribes its topic
      // from before it (backfill re-feeds what a subscription covers).
      const ConsumerConfig& config = config_.consumer(consumer);
      const auto start = start_seq_.find({consumer, event.topic});
      if (std::find(config.topics.begin(), config.topics.end(), event.topic) ==
              config.topics.end() ||
          (start != start_seq_.end() && event.seq <= start->second))
        continue;
    }
    if (in_flight.count(n) > 0) {
      // Its call has just returned: one delivery is done, and one more is owed.
      if (pair.state == PairState::kDelivered) reset_to_pending(pair, Cause::kBackfilledInFlight);
      ++count;
    } else if (pair.state != PairState::kPending) {
      reset_to_pending(pair, Cause::kBackfilled);
      ++count;
    }
  }
  return count;
}

void ReferenceModel::crashed(const std::string& consumer, const std::vector<long long>& ns,
                             TimePoint now) {
  for (long long n : ns) {
    ModelEvent& event = events_.at(n);
    Pair& pair = event.pairs.at(consumer);
    if (pair.state != PairState::kPending) continue;
    ++pair.attempts;
    pair.snoozes = 0;
    pair.last_error = "crashed";
    pair.clock_back_while_pending = false;
    if (pair.attempts >= config_.retry.max_attempts && ns.size() == 1) {
      pair.state = PairState::kDead;
      pair.dead_reason = "crashed";
      continue;
    }
    // Retried after its backoff from the moment of recovery, which the model knows only to be
    // after `now`: due at the latest a few seconds later.
    ++totals_[consumer].retries;
    const Duration backoff = config_.retry.backoff(pair.attempts, event.seq);
    pair.earliest = now + backoff - slack_;
    pair.latest = now + backoff + std::chrono::seconds(5);
    pair.scheduled_at = now;
    pair.cause = Cause::kCrashed;
  }
}

ReferenceModel::CallSnapshot ReferenceModel::snapshot(const std::string& consumer,
                                                      const std::vector<long long>& ns) const {
  CallSnapshot taken;
  taken.consumer = consumer;
  for (long long n : ns) taken.pairs.emplace_back(n, events_.at(n).pairs.at(consumer));
  if (auto totals = totals_.find(consumer); totals != totals_.end()) taken.totals = totals->second;
  return taken;
}

void ReferenceModel::restore(const CallSnapshot& snapshot) {
  for (const auto& [n, pair] : snapshot.pairs) events_.at(n).pairs.at(snapshot.consumer) = pair;
  totals_[snapshot.consumer] = snapshot.totals;
}

void ReferenceModel::add_again(const std::string& consumer, bool oldest) {
  const ConsumerConfig& config = config_.consumer(consumer);
  totals_[consumer] = {};
  pauses_.erase(consumer);    // the pause went with the consumer's row
  breakers_.erase(consumer);  // and so did its breaker's state
  for (const std::string& topic : config.topics)
    start_seq_[{consumer, topic}] = oldest ? 0 : last_seq_;
  for (auto& [_, event] : events_) {
    const bool takes =
        std::find(config.topics.begin(), config.topics.end(), event.topic) != config.topics.end();
    const auto found = event.pairs.find(consumer);
    if (oldest && takes && !event.pruned) {
      Pair fresh;
      if (found != event.pairs.end()) {
        // The app table keeps what the removed consumer applied; the handler's script moves on.
        fresh.delivered = found->second.delivered;
        fresh.resets = found->second.resets + 1;
      }
      if (event.not_before) fresh.earliest = fresh.latest = *event.not_before;
      event.pairs[consumer] = fresh;
    } else if (found != event.pairs.end()) {
      found->second.state = PairState::kRemoved;
    }
  }
}

void ReferenceModel::pruned(long long n, TimePoint cutoff, std::vector<Violation>& out) {
  ModelEvent& event = events_.at(n);
  for (const auto& [consumer, pair] : event.pairs) {
    if (pair.state == PairState::kPending || pair.state == PairState::kDead) {
      out.push_back(
          {"prune removed unfinished work",
           describe(event) + " was pruned while " + state_name(pair.state) + " for " + consumer});
    }
  }
  if (event.created_at >= cutoff) {
    out.push_back({"prune removed unfinished work",
                   describe(event) + " was pruned though created after the retention cutoff"});
  }
  event.pruned = true;
}

std::vector<DuePair> ReferenceModel::due(const InstanceConfig& instance, TimePoint now) const {
  std::vector<DuePair> due;
  std::map<std::string, std::set<std::string>> held_keys;  // consumer -> keys held back
  for (const auto& [_, event] : events_) {
    for (const auto& [consumer, pair] : event.pairs) {
      const bool keyed = !event.key.empty() && config_.consumer(consumer).ordered;
      const bool blocked = keyed && held_keys[consumer].count(event.key) > 0;
      if (keyed && unfinished(pair)) held_keys[consumer].insert(event.key);
      if (pair.state != PairState::kPending || blocked ||
          !instance.handles_topic(consumer, event.topic)) {
        continue;
      }
      // A paused consumer's work waits for the pause's end: by the model's reading at once, by
      // the engine's (read after the model's on real time) up to slack_ later.
      TimePoint pause_ends = TimePoint::min();
      if (const auto pause = pauses_.find(consumer); pause != pauses_.end()) {
        if (now < pause->second.ends) continue;
        pause_ends = pause->second.latest_end;
      }
      // An open breaker holds back all its consumer's work; a half-open one lets the probe run.
      if (const auto breaker = breakers_.find(consumer); breaker != breakers_.end() &&
                                                         breaker->second.open_until &&
                                                         now < *breaker->second.open_until) {
        continue;
      }
      // A not-before time is absolute: no wait, re-anchoring or operator action runs it sooner.
      const TimePoint not_before = event.not_before.value_or(TimePoint::min());
      const TimePoint must_by = std::max(
          {pair.latest, not_before,
           pause_ends > TimePoint::max() - slack_ ? TimePoint::max() : pause_ends + slack_});
      due.push_back(
          {&event, consumer, &pair, std::max(pair.earliest, not_before) <= now, must_by <= now});
    }
  }
  return due;
}

}  // namespace sluice::model
