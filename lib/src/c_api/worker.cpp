// sluice_worker: the C++ Worker with C callbacks as handlers.
#include "sluice/worker.hpp"

#include <memory>
#include <string>

#include "result_codes.hpp"
#include "sluice/consumer.hpp"
#include "sluice/error.hpp"
#include "sluice/sluice.h"
#include "subscription.hpp"

// Opaque to C: the C++ worker.
struct sluice_worker {
  explicit sluice_worker(const std::string& path) : worker(path) {}
  sluice::Worker worker;
};

namespace sluice::c_api {
namespace {

// sluice_worker_subscribe and its _v2: one path, its errors named for `function`.
int worker_subscribe(const std::string& function, sluice_worker* worker, const char* consumer,
                     const char* topic, sluice_handler handler, void* user_data,
                     const sluice_consumer_options_v2& options, char** errmsg) {
  return run(errmsg, [&] {
    require(worker, (function + ": worker is NULL").c_str());
    require(consumer, (function + ": consumer is NULL").c_str());
    require(topic, (function + ": topic is NULL").c_str());
    if (handler == nullptr) throw sluice::InvalidArgument(function + ": handler is NULL");
    worker->worker.subscribe(consumer, topic, to_handler(handler, user_data),
                             to_consumer_options(options));
  });
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

sluice_consumer_options_v2 sluice_consumer_defaults_v2(void) {
  const sluice::Breaker breaker;
  return {.base = sluice_consumer_defaults(),
          .breaker_failures = 0,
          .breaker_cool_down_ms = breaker.cool_down.count(),
          .breaker_max_cool_down_ms = breaker.max_cool_down.count()};
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
  sluice_consumer_options_v2 chosen = sluice_consumer_defaults_v2();
  if (options != nullptr) chosen.base = *options;
  return sluice::c_api::worker_subscribe("sluice_worker_subscribe", worker, consumer, topic,
                                         handler, user_data, chosen, errmsg);
}

int sluice_worker_subscribe_v2(sluice_worker* worker, const char* consumer, const char* topic,
                               sluice_handler handler, void* user_data,
                               const sluice_consumer_options_v2* options, char** errmsg) {
  return sluice::c_api::worker_subscribe(
      "sluice_worker_subscribe_v2", worker, consumer, topic, handler, user_data,
      options != nullptr ? *options : sluice_consumer_defaults_v2(), errmsg);
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
