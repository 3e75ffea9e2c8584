// The C++ side of tests/node/test_otel_trace.js: a worker whose Options::tracer prints each
// delivery attempt's traceparent, and whose handler prints what Event::trace_context() gives it,
// one JSON line per attempt. Its handler fails the first attempt, so that the test sees the
// retry keep the producer's context.
//
// Usage: otel_trace_worker DB
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "sluice/tracer.hpp"
#include "sluice/worker.hpp"

namespace {

class PrintingTracer : public sluice::Tracer {
 public:
  void attempt_started(const sluice::DeliveryAttempt& attempt) override {
    std::cout << nlohmann::json{{"attempt", attempt.attempt},
                                {"consumer", attempt.consumer},
                                {"traceparent", attempt.trace_contexts.at(0)}}
              << std::endl;
  }
  void attempt_ended(const sluice::DeliveryAttempt&, const std::vector<sluice::Outcome>&) override {
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: otel_trace_worker DB\n";
    return 2;
  }
  sluice::Options options;
  options.tracer = std::make_shared<PrintingTracer>();
  options.retry.initial_backoff = std::chrono::milliseconds(0);
  sluice::Worker worker(argv[1], options);
  sluice::ConsumerOptions consumer;
  consumer.start_from = sluice::StartFrom::kOldest;
  worker.subscribe(
      "mailer", "order.placed",
      [](const sluice::Event& event, sluice::Context& ctx) {
        std::cout << nlohmann::json{{"handler_saw", event.trace_context().value_or("")}}
                  << std::endl;
        if (ctx.attempt() == 1) ctx.retry("the first attempt fails");
      },
      consumer);
  worker.run_until_idle();
  return 0;
}
