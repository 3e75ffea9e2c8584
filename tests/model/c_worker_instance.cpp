#include "c_worker_instance.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "sluice/sluice.h"

namespace sluice::model {
namespace {

// Throws with the C API's message (freed here) unless `rc` is SLUICE_OK.
void check(int rc, char* errmsg, const std::string& what) {
  if (rc == SLUICE_OK) return;
  const std::string message = errmsg != nullptr ? errmsg : "(no message)";
  sluice_free(errmsg);
  throw std::runtime_error("model: " + what + ": " + message);
}

int handle(void* user_data, const sluice_event* view, sqlite3* conn, sluice_outcome* outcome) {
  auto* subscription = static_cast<CWorkerInstance::Subscription*>(user_data);
  // A handler must not throw through the C API: a failing harness ends the run.
  try {
    Event event;
    event.seq = view->seq;
    event.id = view->id;
    event.topic = view->topic;
    event.payload = view->payload;
    event.key = view->key;
    const long long n = event_number(event);
    CallSink& sink = *subscription->sink;
    subscription->owner->on_handler_call();
    if (!subscription->outside) watch_transaction(conn, sink);
    const Scripted scripted = sink.on_call(subscription->consumer, subscription->generation, event,
                                           view->attempt, subscription->outside ? nullptr : conn);
    // As the C++ handlers do: the write comes first; a failure rolls it back with the attempt.
    if (!subscription->outside && scripted.writes)
      record_application(conn, subscription->consumer, n);
    std::snprintf(outcome->error, sizeof outcome->error, "%s", scripted.error.c_str());
    switch (scripted.action) {
      case Action::kOk:
        return SLUICE_DONE;
      case Action::kRetry:
      case Action::kThrowAfterWrite:
        return SLUICE_RETRY;
      case Action::kDeadLetter:
      case Action::kThrowPermanent:
        return SLUICE_PERMANENT;
      case Action::kSnooze:
        outcome->snooze_ms = scripted.snooze.count();
        return SLUICE_SNOOZE;
      case Action::kThrottle:
        outcome->snooze_ms = scripted.snooze.count();
        return SLUICE_THROTTLE;
    }
    return SLUICE_RETRY;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "model_test: a C handler's harness failed: %s\n", e.what());
    std::abort();
  }
}

}  // namespace

CWorkerInstance::CWorkerInstance(const std::string& path, const SequenceConfig& config,
                                 const InstanceConfig& instance, CallSink& sink) {
  char* errmsg = nullptr;
  check(sluice_worker_open(path.c_str(), &worker_, &errmsg), errmsg, "sluice_worker_open");
  for (const ConsumerConfig& consumer : config.consumers) {
    sluice_consumer_options options = sluice_consumer_defaults();
    options.outside_transaction = consumer.outside ? 1 : 0;
    options.ordered = consumer.ordered ? 1 : 0;
    options.start_from_oldest = consumer.oldest ? 1 : 0;
    options.max_attempts = config.retry.max_attempts;
    options.initial_backoff_ms = config.retry.initial_backoff.count();
    options.max_backoff_ms = config.retry.max_backoff.count();
    for (const std::string& topic : consumer.topics) {
      if (!instance.handles_topic(consumer.name, topic)) continue;
      // The C API has no batch handler: a batch topic is taken one event at a time here.
      subscriptions_.push_back(std::make_unique<Subscription>(
          Subscription{&sink, consumer.name, consumer.generation, consumer.outside, this}));
      check(sluice_worker_subscribe(worker_, consumer.name.c_str(), topic.c_str(), &handle,
                                    subscriptions_.back().get(), &options, &errmsg),
            errmsg, "sluice_worker_subscribe " + consumer.name + " " + topic);
    }
  }
}

CWorkerInstance::~CWorkerInstance() { sluice_worker_close(worker_); }

void CWorkerInstance::on_handler_call() {
  if (!probe_start_) return;
  probe_start_ = false;
  int rc = SLUICE_OK;
  char* errmsg = nullptr;
  std::thread other([this, &rc, &errmsg] { rc = sluice_worker_start(worker_, &errmsg); });
  other.join();
  const std::string message = errmsg != nullptr ? errmsg : "";
  sluice_free(errmsg);
  probe_result_ = rc == SLUICE_INVALID ? "refused: " + message
                                       : "accepted (" + std::to_string(rc) + ") " + message;
}

std::string CWorkerInstance::drain_probing_start(DrainResult& result) {
  probe_start_ = true;
  probe_result_.clear();
  result = drain();
  probe_start_ = false;
  return probe_result_;
}

DrainResult CWorkerInstance::drain() {
  sluice_drain_result result{};
  char* errmsg = nullptr;
  check(sluice_worker_run_until_idle(worker_, &result, &errmsg), errmsg,
        "sluice_worker_run_until_idle");
  return {result.delivered, result.retried, result.dead_lettered};
}

}  // namespace sluice::model
