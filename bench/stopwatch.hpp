// Elapsed time of a measured stretch of work.
#pragma once

#include <chrono>
#include <ctime>

namespace bench {

// Thread-safe to read: a plain value.
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// CLOCK_MONOTONIC in nanoseconds: one clock for every process on the machine, so a time taken
// in one process can be subtracted from a time taken in another.
inline long long monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1'000'000'000LL + now.tv_nsec;
}

}  // namespace bench
