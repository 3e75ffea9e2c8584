// sluice_new_event and the status of sluice_enqueued, between C and C++: shared by sluice_enqueue
// and sluice_harness_enqueue.
#pragma once

#include "sluice/event.hpp"
#include "sluice/outbox.hpp"
#include "sluice/sluice.h"

namespace sluice::c_api {

// The NewEvent `event` describes. Throws InvalidArgument for a NULL topic or headers that are not
// a JSON object of strings.
NewEvent to_new_event(const sluice_new_event& event);

// As to_new_event, with the event's version (0 meaning 1).
NewEvent to_new_event(const sluice_new_event_v2& event);

// SLUICE_STORED, SLUICE_DUPLICATE_ID or SLUICE_DUPLICATE_DEDUP_KEY.
int status_code(EnqueueResult::Status status);

}  // namespace sluice::c_api
