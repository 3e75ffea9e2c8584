// sluice_worker: the C++ Worker with C callbacks as handlers.
#include "sluice/worker.hpp"

#include <cstring>
#include <memory>
#include <string>

#include "../event_codec.hpp"
#include "result_codes.hpp"
#include "sluice/consumer.hpp"
#include "sluice/error.hpp"
#include "sluice/sluice.h"

// Opaque to C: the C++ worker.
struct sluice_worker {
  explicit sluice_worker(const std::string& path) : worker(path) {}
  sluice::Worker worker;
};

namespace sluice::c_api {
namespace {

ConsumerOptions to_consumer_options(const sluice_consumer_options& options) {
  RetryPolicy retry;
  retry.max_attempts = options.max_attempts;
  retry.initial_backoff = Duration(options.initial_backoff_ms);
  retry.max_backoff = Duration(options.max_backoff_ms);
  return {.mode = options.outside_transaction != 0 ? DeliveryMode::kOutsideTransaction
                                                   : DeliveryMode::kInTransaction,
          .ordered = options.ordered != 0,
          .start_from = options.start_from_oldest != 0 ? StartFrom::kOldest : StartFrom::kNow,
          .retry = retry};
}

// Calls the C handler on `event` and turns what it returns into what a C++ handler asks of its
// Context.
void call(sluice_handler handler, void* user_data, const Event& event, Context& context) {
  const std::string headers = event.headers.empty() ? "{}" : encode_headers(event.headers);
  const sluice_event view{
      .seq = event.seq,
      .id = event.id.c_str(),
      .topic = event.topic.c_str(),
      .payload = event.payload.c_str(),
      .key = event.key.c_str(),
      .dedup_key = event.dedup_key.c_str(),
      .headers = headers.c_str(),
      .created_at_ms = event.created_at.time_since_epoch().count(),
      .consumer = context.consumer().c_str(),
      .attempt = context.attempt(),
  };
  sqlite3* conn = nullptr;
  try {
    conn = context.db().getHandle();
  } catch (const TransactionError&) {
    // An outside-transaction consumer: no transaction to offer.
  }
  sluice_outcome outcome{};
  const int kind = handler(user_data, &view, conn, &outcome);
  const std::string error(outcome.error, strnlen(outcome.error, sizeof outcome.error));
  switch (kind) {
    case SLUICE_DONE:
      return;
    case SLUICE_RETRY:
      context.retry(error);
      return;
    case SLUICE_PERMANENT:
      context.dead_letter(error);
      return;
    case SLUICE_SNOOZE:
      if (outcome.snooze_ms < 0) {
        context.retry("sluice: the handler snoozed for a negative time (" +
                      std::to_string(outcome.snooze_ms) + " ms)");
      } else {
        context.snooze(Duration(outcome.snooze_ms));
      }
      return;
    case SLUICE_THROTTLE:
      if (outcome.snooze_ms < 0) {
        context.retry("sluice: the handler throttled for a negative time (" +
                      std::to_string(outcome.snooze_ms) + " ms)");
      } else {
        context.throttle(Duration(outcome.snooze_ms), error);
      }
      return;
    default:
      context.retry("sluice: the handler returned " + std::to_string(kind) +
                    ", none of SLUICE_DONE, SLUICE_RETRY, SLUICE_PERMANENT, SLUICE_SNOOZE, "
                    "SLUICE_THROTTLE");
  }
}

}  // namespace
}  // namespace sluice::c_api

extern "C" {

sluice_consumer_options sluice_consumer_defaults(void) {
  const sluice::RetryPolicy retry;
  return {.outside_transaction = 0,
          .ordered = 0,
          .start_from_oldest = 0,
          .max_attempts = retry.max_attempts,
          .initial_backoff_ms = retry.initial_backoff.count(),
          .max_backoff_ms = retry.max_backoff.count()};
}

int sluice_worker_open(const char* path, sluice_worker** worker, char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    require(path, "sluice_worker_open: path is NULL");
    require(worker, "sluice_worker_open: worker (the out parameter) is NULL");
    const std::string file = path;
    if (file.empty() || file == ":memory:") {
      // Every connection opened by that name is a database of its own, empty.
      throw sluice::InvalidArgument("sluice_worker_open: a worker needs a file; \"" + file +
                                    "\" would open a second, empty in-memory database");
    }
    *worker = std::make_unique<sluice_worker>(path).release();
  });
}

int sluice_worker_subscribe(sluice_worker* worker, const char* consumer, const char* topic,
                            sluice_handler handler, void* user_data,
                            const sluice_consumer_options* options, char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    require(worker, "sluice_worker_subscribe: worker is NULL");
    require(consumer, "sluice_worker_subscribe: consumer is NULL");
    require(topic, "sluice_worker_subscribe: topic is NULL");
    if (handler == nullptr)
      throw sluice::InvalidArgument("sluice_worker_subscribe: handler is NULL");
    const sluice_consumer_options chosen =
        options != nullptr ? *options : sluice_consumer_defaults();
    worker->worker.subscribe(
        consumer, topic,
        [handler, user_data](const sluice::Event& event, sluice::Context& context) {
          call(handler, user_data, event, context);
        },
        to_consumer_options(chosen));
  });
}

int sluice_worker_run_until_idle(sluice_worker* worker, sluice_drain_result* result,
                                 char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    require(worker, "sluice_worker_run_until_idle: worker is NULL");
    const sluice::DrainResult drained = worker->worker.run_until_idle();
    if (result != nullptr) {
      *result = {.delivered = drained.delivered,
                 .retried = drained.retried,
                 .dead_lettered = drained.dead_lettered};
    }
  });
}

int sluice_worker_start(sluice_worker* worker, char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    require(worker, "sluice_worker_start: worker is NULL");
    worker->worker.start();
  });
}

int sluice_worker_stop(sluice_worker* worker, char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    require(worker, "sluice_worker_stop: worker is NULL");
    worker->worker.stop();
  });
}

// ~Worker stops the worker and never throws: it logs what it cannot clean up.
void sluice_worker_close(sluice_worker* worker) { delete worker; }

}  // extern "C"
