// sluice_harness: the C++ testing Harness for C tests, with C callbacks as handlers.
#include <memory>
#include <string>

#include "database_handle.hpp"
#include "new_event.hpp"
#include "result_codes.hpp"
#include "sluice/error.hpp"
#include "sluice/sluice.h"
#include "sluice/testing.hpp"
#include "subscription.hpp"

// Opaque to C: the harness, and its connection as a sluice_db whose one-thread rule every call
// on the harness shares.
struct sluice_harness {
  explicit sluice_harness(sluice::testing::Harness opened)
      : harness(std::move(opened)), db(harness.db()) {}
  sluice::testing::Harness harness;
  sluice_db db;
};

namespace sluice::c_api {
namespace {

void fill(sluice_drain_result* result, const DrainResult& drained) {
  if (result == nullptr) return;
  *result = {.delivered = drained.delivered,
             .retried = drained.retried,
             .dead_lettered = drained.dead_lettered};
}

// sluice_harness_subscribe and its _v2: one path, its errors named for `function`.
int harness_subscribe(const std::string& function, sluice_harness* harness, const char* consumer,
                      const char* topic, sluice_handler handler, void* user_data,
                      const sluice_consumer_options_v2& options, char** errmsg) {
  return run(errmsg, [&] {
    require(harness, (function + ": harness is NULL").c_str());
    DatabaseUse use(&harness->db, function.c_str());
    require(consumer, (function + ": consumer is NULL").c_str());
    require(topic, (function + ": topic is NULL").c_str());
    if (handler == nullptr) throw sluice::InvalidArgument(function + ": handler is NULL");
    harness->harness.subscribe(consumer, topic, to_handler(handler, user_data),
                               to_consumer_options(options));
  });
}

}  // namespace
}  // namespace sluice::c_api

extern "C" {

int sluice_harness_open(const char* path, sluice_harness** harness, char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    require(path, "sluice_harness_open: path is NULL");
    require(harness, "sluice_harness_open: harness (the out parameter) is NULL");
    *harness = std::make_unique<sluice_harness>(sluice::testing::Harness::open(path)).release();
  });
}

void sluice_harness_close(sluice_harness* harness) { delete harness; }

sluice_db* sluice_harness_db(sluice_harness* harness) {
  return harness != nullptr ? &harness->db : nullptr;
}

int64_t sluice_harness_now(sluice_harness* harness) {
  return harness != nullptr ? harness->harness.clock().now().time_since_epoch().count() : 0;
}

int sluice_harness_set_time(sluice_harness* harness, int64_t now_ms, char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    require(harness, "sluice_harness_set_time: harness is NULL");
    if (now_ms < 0) {
      throw sluice::InvalidArgument("sluice_harness_set_time: " + std::to_string(now_ms) +
                                    " ms is before the Unix epoch");
    }
    harness->harness.clock().set(sluice::TimePoint(sluice::Duration(now_ms)));
  });
}

int sluice_harness_subscribe(sluice_harness* harness, const char* consumer, const char* topic,
                             sluice_handler handler, void* user_data,
                             const sluice_consumer_options* options, char** errmsg) {
  sluice_consumer_options_v2 chosen = sluice_consumer_defaults_v2();
  if (options != nullptr) chosen.base = *options;
  return sluice::c_api::harness_subscribe("sluice_harness_subscribe", harness, consumer, topic,
                                          handler, user_data, chosen, errmsg);
}

int sluice_harness_subscribe_v2(sluice_harness* harness, const char* consumer, const char* topic,
                                sluice_handler handler, void* user_data,
                                const sluice_consumer_options_v2* options, char** errmsg) {
  return sluice::c_api::harness_subscribe(
      "sluice_harness_subscribe_v2", harness, consumer, topic, handler, user_data,
      options != nullptr ? *options : sluice_consumer_defaults_v2(), errmsg);
}

int sluice_harness_enqueue(sluice_harness* harness, const sluice_new_event* event,
                           sluice_enqueued* result, char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    require(harness, "sluice_harness_enqueue: harness is NULL");
    DatabaseUse use(&harness->db, "sluice_harness_enqueue");
    require(event, "sluice_harness_enqueue: event is NULL");
    const sluice::EnqueueResult enqueued = harness->harness.enqueue(to_new_event(*event));
    if (result == nullptr) return;
    char* id = copy_string(enqueued.id);
    if (id == nullptr) throw std::bad_alloc();
    *result = {.status = status_code(enqueued.status), .seq = enqueued.seq, .id = id};
  });
}

int sluice_harness_drain(sluice_harness* harness, sluice_drain_result* result, char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    require(harness, "sluice_harness_drain: harness is NULL");
    DatabaseUse use(&harness->db, "sluice_harness_drain");
    fill(result, harness->harness.drain());
  });
}

int sluice_harness_advance(sluice_harness* harness, int64_t by_ms, sluice_drain_result* result,
                           char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    require(harness, "sluice_harness_advance: harness is NULL");
    DatabaseUse use(&harness->db, "sluice_harness_advance");
    if (by_ms < 0) {
      throw sluice::InvalidArgument("sluice_harness_advance: by_ms is negative (" +
                                    std::to_string(by_ms) + ")");
    }
    fill(result, harness->harness.advance(sluice::Duration(by_ms)));
  });
}

}  // extern "C"
