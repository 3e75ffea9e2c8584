// The console's live chart: per-consumer figures sampled while the console runs.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "json_fields.hpp"
#include "sluice/stats.hpp"

namespace sluice::cli {

// Thread-safe. Samples consumer_stats() every `interval` from its own thread (the first sample
// in the constructor) and keeps the samples of the last `keep`; the file is never written.
class ConsoleHistory {
 public:
  // `read` opens a read-only connection and returns the stats; it runs on the sampling thread.
  // A sample that fails (the file busy for longer than the busy timeout) is skipped.
  ConsoleHistory(std::function<std::vector<ConsumerStats>()> read, Duration interval,
                 Duration keep);
  ~ConsoleHistory();
  ConsoleHistory(const ConsoleHistory&) = delete;
  ConsoleHistory& operator=(const ConsoleHistory&) = delete;

  // {"samples": [{"at": ms, "consumers": {name: {backlog, delivered_total, dead}}}]}, oldest
  // first.
  Json samples_json() const;

 private:
  struct Sample {
    TimePoint at;
    std::vector<ConsumerStats> stats;
  };

  void take_sample();
  void run();

  std::function<std::vector<ConsumerStats>()> read_;
  const Duration interval_;
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::deque<Sample> samples_;
  std::thread thread_;
};

}  // namespace sluice::cli
