// Telling Options::tracer of one handler call: started before it, ended after it, even when the
// delivery is cut short by a storage failure.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "sluice/event.hpp"
#include "sluice/tracer.hpp"

namespace sluice {

// Not thread-safe: lives on the stack of the thread that calls the handler.
class AttemptTrace {
 public:
  // Tells `tracer` (nothing when null) that `consumer`'s handler is about to be called with
  // `event`, or a batch handler with `events`, at `attempt`.
  AttemptTrace(Tracer* tracer, const std::string& consumer, const Event& event, int attempt);
  AttemptTrace(Tracer* tracer, const std::string& consumer, const std::vector<Event>& events,
               int attempt);
  // Ends an attempt end() was not given: the delivery was interrupted (a retry outcome).
  ~AttemptTrace();
  AttemptTrace(const AttemptTrace&) = delete;
  AttemptTrace& operator=(const AttemptTrace&) = delete;

  // Tells the tracer the handler's outcome for each event, in order.
  void end(const std::vector<Outcome>& outcomes);
  // Without a tracer, nothing is copied: this runs on every handler call.
  void end(const Outcome& outcome) {
    if (tracer_ != nullptr) end(std::vector<Outcome>{outcome});
  }

 private:
  void start(const std::string& consumer, const Event& first, int attempt);

  Tracer* tracer_ = nullptr;
  std::optional<DeliveryAttempt> attempt_;
};

}  // namespace sluice
