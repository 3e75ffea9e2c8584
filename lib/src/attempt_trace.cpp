#include "attempt_trace.hpp"

namespace sluice {
namespace {

// A tracer's failure is the app's tracing problem, never a delivery's: ignored.
template <typename Call>
void guarded_call(Call&& call) noexcept {
  try {
    call();
  } catch (...) {
  }
}

}  // namespace

AttemptTrace::AttemptTrace(Tracer* tracer, const std::string& consumer, const Event& event,
                           int attempt)
    : tracer_(tracer) {
  if (tracer_ == nullptr) return;
  attempt_.emplace();
  attempt_->event_ids.push_back(event.id);
  attempt_->trace_contexts.push_back(event.trace_context().value_or(""));
  start(consumer, event, attempt);
}

AttemptTrace::AttemptTrace(Tracer* tracer, const std::string& consumer,
                           const std::vector<Event>& events, int attempt)
    : tracer_(events.empty() ? nullptr : tracer) {
  if (tracer_ == nullptr) return;
  attempt_.emplace();
  for (const Event& event : events) {
    attempt_->event_ids.push_back(event.id);
    attempt_->trace_contexts.push_back(event.trace_context().value_or(""));
  }
  start(consumer, events.front(), attempt);
}

void AttemptTrace::start(const std::string& consumer, const Event& first, int attempt) {
  attempt_->consumer = consumer;
  attempt_->topic = first.topic;
  attempt_->attempt = attempt;
  guarded_call([&] { tracer_->attempt_started(*attempt_); });
}

AttemptTrace::~AttemptTrace() {
  if (!attempt_) return;
  guarded_call([&] {
    end(std::vector<Outcome>(attempt_->batch_size(),
                             Outcome::retry("the delivery was interrupted")));
  });
}

void AttemptTrace::end(const std::vector<Outcome>& outcomes) {
  if (!attempt_) return;
  guarded_call([&] { tracer_->attempt_ended(*attempt_, outcomes); });
  attempt_.reset();
}

}  // namespace sluice
