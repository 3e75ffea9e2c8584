#include "console_history.hpp"

namespace sluice::cli {

ConsoleHistory::ConsoleHistory(std::function<std::vector<ConsumerStats>()> read, Duration interval,
                               Duration keep)
    : read_(std::move(read)),
      interval_(interval),
      capacity_(static_cast<std::size_t>(std::max<long long>(1, keep / interval))) {
  // The first sample before the console answers, so the chart never starts empty.
  take_sample();
  thread_ = std::thread([this] { run(); });
}

ConsoleHistory::~ConsoleHistory() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ConsoleHistory::take_sample() {
  Sample sample{system_clock()->now(), {}};
  try {
    sample.stats = read_();
  } catch (const std::exception&) {
    // The chart shows a gap; the overview, read on demand, reports the error.
    return;
  }
  std::lock_guard lock(mutex_);
  samples_.push_back(std::move(sample));
  if (samples_.size() > capacity_) samples_.pop_front();
}

void ConsoleHistory::run() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
    lock.unlock();
    take_sample();
    lock.lock();
  }
}

Json ConsoleHistory::samples_json() const {
  std::lock_guard lock(mutex_);
  Json samples = Json::array();
  for (const Sample& sample : samples_) {
    Json consumers = Json::object();
    for (const ConsumerStats& s : sample.stats) {
      consumers[s.consumer] =
          Json{{"backlog", s.pending}, {"delivered_total", s.delivered_total}, {"dead", s.dead}};
    }
    samples.push_back(Json{{"at", sample.at.time_since_epoch().count()}, {"consumers", consumers}});
  }
  return Json{{"samples", samples}};
}

}  // namespace sluice::cli
