// The handler the benchmark's consumers run: insert one domain row per event, the way a careful
// app would (statement prepared once per connection).
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "sluice/consumer.hpp"

namespace bench {

// How the first attempt of a failing event fails: through Context::retry, or by throwing.
enum class FailureStyle { kContextRetry, kThrow };

// Which events fail their first attempt (every `every`-th by seq; none with 0), and how.
struct Failures {
  int every = 0;
  FailureStyle style = FailureStyle::kContextRetry;
};

// Not thread-safe: serves one worker's handler calls. Must be destroyed before the worker whose
// connection its statement was prepared on, and outlive the handler it hands out.
class DomainWriter {
 public:
  // The first attempt of each event `failures` names fails, and its retry succeeds.
  explicit DomainWriter(Failures failures = {}) : failures_(failures) {}

  sluice::Handler handler();
  // What the handler does, for handlers that do more around it.
  void write(const sluice::Event& event, sluice::Context& context);
  // Events written so far; readable from any thread.
  long long written() const { return written_.load(); }
  // From now on, notes the time of every `every`-th write, starting with now.
  void mark_every(long long every);
  // The times noted, for throughput window by window.
  const std::vector<std::chrono::steady_clock::time_point>& marks() const { return marks_; }

 private:
  Failures failures_;
  SQLite::Database* prepared_on_ = nullptr;
  std::unique_ptr<SQLite::Statement> insert_;
  std::atomic<long long> written_{0};
  long long mark_every_ = 0;
  long long since_mark_ = 0;
  std::vector<std::chrono::steady_clock::time_point> marks_;
};

}  // namespace bench
