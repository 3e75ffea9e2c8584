// sluice_delivery_state: delivery_statuses for one consumer, for C.
#include <optional>
#include <string>

#include "../consumer_registry.hpp"
#include "database_handle.hpp"
#include "result_codes.hpp"
#include "sluice/error.hpp"
#include "sluice/inspect.hpp"
#include "sluice/sluice.h"

namespace sluice::c_api {
namespace {

int state_code(const std::string& state) {
  if (state == "pending") return SLUICE_STATE_PENDING;
  if (state == "claimed") return SLUICE_STATE_CLAIMED;
  if (state == "retrying") return SLUICE_STATE_RETRYING;
  if (state == "delivered") return SLUICE_STATE_DELIVERED;
  if (state == "dead") return SLUICE_STATE_DEAD;
  if (state == "discarded") return SLUICE_STATE_DISCARDED;
  throw Error("sluice_delivery_state: unknown state '" + state + "'");
}

}  // namespace
}  // namespace sluice::c_api

extern "C" {

int sluice_delivery_state(sluice_db* db, const char* consumer, const char* event_id,
                          sluice_delivery* state, char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    DatabaseUse use(db, "sluice_delivery_state");
    require(consumer, "sluice_delivery_state: consumer is NULL");
    require(event_id, "sluice_delivery_state: event_id is NULL");
    require(state, "sluice_delivery_state: state (the out parameter) is NULL");
    sluice::consumer_id(use.db(), consumer);  // NotFound naming an unknown consumer
    const sluice::Event event = sluice::find_event(use.db(), event_id);
    for (const sluice::DeliveryStatus& status : sluice::delivery_statuses(use.db(), event)) {
      if (status.consumer != consumer) continue;
      const int code = state_code(status.state);
      char* error = nullptr;
      if (!status.last_error.empty()) {
        error = copy_string(status.last_error);
        if (error == nullptr) throw std::bad_alloc();
      }
      const auto millis = [](const std::optional<sluice::TimePoint>& t) -> int64_t {
        return t ? t->time_since_epoch().count() : 0;
      };
      *state = {.state = code,
                .attempts = status.attempts,
                .next_attempt_at_ms = millis(status.next_attempt_at),
                .delivered_at_ms = millis(status.delivered_at),
                .last_error = error};
      return;
    }
    throw sluice::NotFound(std::string("sluice_delivery_state: event '") + event_id + "' (topic '" +
                           event.topic + "') is not for consumer '" + consumer +
                           "': it does not subscribe to the topic, or subscribed after the event "
                           "was enqueued");
  });
}

}  // extern "C"
