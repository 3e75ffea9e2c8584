// Delivery attempts as tracing sees them: a hook for an app's OpenTelemetry SDK (or any tracer)
// to make one "process" span per attempt, linked to the producers' trace context.
#pragma once

#include <string>
#include <vector>

#include "sluice/consumer.hpp"

namespace sluice {

// One call of a handler: one event, or a batch handler's batch.
struct DeliveryAttempt {
  std::string consumer;
  // The first event's topic and attempt (1 for the first); a batch's events may differ.
  std::string topic;
  int attempt = 1;
  // The events handed over, in order, and the traceparent each carried ("" for none): the
  // parent of the attempt's span when there is one event, its links when there are several, as
  // the OpenTelemetry messaging conventions have it.
  std::vector<std::string> event_ids;
  std::vector<std::string> trace_contexts;

  std::size_t batch_size() const { return event_ids.size(); }
};

// Told of every handler call a Worker makes (Options::tracer). Not called for events no handler
// is called for (held, skipped as seen, given back by a pause or a throttle).
//
// Thread-safety: must be thread-safe; a worker calls it from its own thread and from the thread
// that runs outside-transaction handlers. For one attempt both calls come from the thread that
// calls the handler, around the call, with the same DeliveryAttempt object, so a tracer may keep
// the attempt's span in a thread_local or keyed by the object's address until attempt_ended.
class Tracer {
 public:
  virtual ~Tracer() = default;
  // Just before the handler is called.
  virtual void attempt_started(const DeliveryAttempt& attempt) = 0;
  // Just after it returned or threw: the handler's outcome per event (in event_ids' order; an
  // exception is a kRetry or kPermanent outcome with its message). Whether a failed event is
  // retried or dead-lettered is decided afterwards by the retry policy.
  virtual void attempt_ended(const DeliveryAttempt& attempt,
                             const std::vector<Outcome>& outcomes) = 0;
};

}  // namespace sluice
