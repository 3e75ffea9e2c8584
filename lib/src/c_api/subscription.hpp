// A C subscription as the C++ Worker takes it: its options, and its handler called as a C++
// handler. Shared by sluice_worker and sluice_harness, which subscribe alike.
#pragma once

#include "sluice/consumer.hpp"
#include "sluice/sluice.h"

namespace sluice::c_api {

// The ConsumerOptions `options` describe (RetryPolicy's other fields at their defaults).
ConsumerOptions to_consumer_options(const sluice_consumer_options& options);
// The same with a circuit breaker (none for breaker_failures 0; its fields checked by the
// Worker, naming the one out of range).
ConsumerOptions to_consumer_options(const sluice_consumer_options_v2& options);

// A C++ handler that calls `handler` with `user_data` and does what its result asks of the
// Context.
Handler to_handler(sluice_handler handler, void* user_data);

}  // namespace sluice::c_api
