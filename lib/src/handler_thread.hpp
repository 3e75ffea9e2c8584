// The thread a worker runs a batch handler on while its own thread commits the batch before.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace sluice {

// Runs one job at a time on a thread of its own, started on first use and joined on
// destruction. Not thread-safe: one owner calls run() and wait() alternately.
class HandlerThread {
 public:
  HandlerThread() = default;
  ~HandlerThread();
  HandlerThread(const HandlerThread&) = delete;
  HandlerThread& operator=(const HandlerThread&) = delete;

  // Starts `job`. The job before must have been waited for.
  void run(std::function<void()> job);
  // Waits until the job is done; returns what it threw, if anything.
  std::exception_ptr wait();

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::function<void()> job_;
  bool busy_ = false;
  bool quit_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace sluice
