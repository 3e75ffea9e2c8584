// Elapsed time of a measured stretch of work.
#pragma once

#include <chrono>
#include <ctime>
#include <fstream>

namespace bench {

// Nanoseconds the calling thread has spent runnable but waiting for a CPU that other threads or
// processes held (the second field of /proc/thread-self/schedstat); 0 where the kernel does not
// say.
inline long long runqueue_wait_ns() {
  std::ifstream schedstat("/proc/thread-self/schedstat");
  long long on_cpu = 0, waiting = 0;
  schedstat >> on_cpu >> waiting;
  return waiting;
}

// Not thread-safe: read it on the thread that made it.
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()), start_wait_ns_(runqueue_wait_ns()) {}

  // Wall time since construction.
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  // Wall time less the time this thread sat waiting for a CPU: on a shared machine other
  // processes steal CPU time from one run and not the next, while waits for the disk still
  // count. For work done entirely on this thread.
  double unstolen_seconds() const {
    return seconds() - (runqueue_wait_ns() - start_wait_ns_) / 1e9;
  }

 private:
  std::chrono::steady_clock::time_point start_;
  long long start_wait_ns_;
};

// CLOCK_MONOTONIC in nanoseconds: one clock for every process on the machine, so a time taken
// in one process can be subtracted from a time taken in another.
inline long long monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1'000'000'000LL + now.tv_nsec;
}

}  // namespace bench
