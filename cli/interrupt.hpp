// Clean stops for long-running commands (stats --watch, tail, metrics --listen, paced replays).
#pragma once

#include <chrono>

namespace sluice::cli {

// Not thread-safe; at most one at a time. Catches SIGINT and SIGTERM while it lives and restores
// the previous handlers when destroyed.
class InterruptWatch {
 public:
  InterruptWatch();
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

  // Waits until a signal arrives or `timeout` passes. Returns true once a signal has arrived.
  bool wait_for(std::chrono::milliseconds timeout);
  bool interrupted() const;
  // A descriptor readable once a signal has arrived (not to be read), for waits on other
  // descriptors that a signal just before them would not end.
  int readable_when_interrupted() const;
};

}  // namespace sluice::cli
