// Scenario 7: the clock jumps back an hour (retries still fire within their backoff) and forward
// an hour (no handler runs twice concurrently because a live claim looks expired).
#include <SQLiteCpp/Statement.h>

#include <atomic>
#include <future>
#include <sluice/sluice.hpp>

#include "applied_check.hpp"
#include "scenario.hpp"
#include "temp_dir.hpp"

namespace sluice::torture {

namespace {

Options clock_options(const std::shared_ptr<ManualClock>& clock) {
  Options options;
  options.clock = clock;
  options.retry.max_attempts = 5;
  options.retry.initial_backoff = std::chrono::seconds(1);
  options.retry.jitter = 0;
  options.poll_interval = std::chrono::milliseconds(5);
  return options;
}

void check_jump_back(ScenarioResult& result) {
  TempDir dir;
  auto clock = std::make_shared<ManualClock>();
  const Options options = clock_options(clock);
  const std::string path = dir.file("back.db");
  SQLite::Database db = open_database(path, options);
  Outbox outbox(db, options);
  NewEvent e;
  e.topic = "torture";
  const std::string id = outbox.enqueue_now(e).id;
  int calls = 0;
  Worker worker(db, options);
  ConsumerOptions from_oldest;
  from_oldest.start_from = StartFrom::kOldest;
  worker.subscribe(
      "c0", "torture",
      [&](const Event&, Context& ctx) {
        ++calls;
        if (ctx.attempt() == 1) throw std::runtime_error("first attempt fails");
      },
      from_oldest);
  worker.run_until_idle();
  clock->advance(-std::chrono::hours(1));
  clock->advance(options.retry.backoff(1, 1) + std::chrono::milliseconds(1));
  const DrainResult after = worker.run_until_idle();
  ++result.runs;
  ++result.events;
  if (calls != 2 || after.delivered != 1) {
    result.fail("after the clock jumped back 1h, the retry did not fire within its backoff (" +
                std::to_string(calls) + " handler calls)");
    result.lost += 1;
  }
}

void check_jump_forward(ScenarioResult& result) {
  TempDir dir;
  auto clock = std::make_shared<ManualClock>();
  const Options options = clock_options(clock);
  const std::string path = dir.file("forward.db");
  {
    SQLite::Database db = open_database(path, options);
    Outbox outbox(db, options);
    NewEvent e;
    e.topic = "torture";
    outbox.enqueue_now(e);
  }
  std::atomic<int> running{0};
  std::atomic<int> most_running{0};
  std::atomic<int> calls{0};
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto handler = [&](const Event&, Context&) {
    const int now_running = ++running;
    most_running = std::max(most_running.load(), now_running);
    if (++calls == 1) {
      entered.set_value();
      released.wait();
    }
    --running;
  };
  ConsumerOptions outside;
  outside.mode = DeliveryMode::kOutsideTransaction;
  outside.start_from = StartFrom::kOldest;
  Worker first(path, options);
  first.subscribe("c0", "torture", handler, outside);
  first.start();
  if (entered.get_future().wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    result.fail("the started worker never ran the handler");
    release.set_value();
    return;
  }
  clock->advance(std::chrono::hours(1));
  {
    Worker second(path, options);
    second.subscribe("c0", "torture", handler, outside);
    second.run_until_idle();
  }
  release.set_value();
  first.stop();
  Worker last(path, options);
  last.subscribe("c0", "torture", handler, outside);
  last.run_until_idle();
  ++result.runs;
  ++result.events;
  if (most_running > 1) result.fail("a handler ran twice concurrently after a +1h clock jump");
  if (calls > 1) result.double_applied += calls - 1;
  if (calls == 0) result.lost += 1;
}

}  // namespace

ScenarioResult run_clock_jumps(const SuiteConfig&) {
  ScenarioResult result("7 clock jumps");
  check_jump_back(result);
  check_jump_forward(result);
  result.notes = "-1h: retry within backoff; +1h: live claim not taken over";
  return result;
}

}  // namespace sluice::torture
