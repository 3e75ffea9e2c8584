// One side of a compared pair (the floor, or sluice), measured a slice at a time so that the two
// sides can take turns.
#pragma once

namespace bench {

// Not thread-safe: made, prepared and run on the measuring thread.
class Side {
 public:
  virtual ~Side() = default;
  // Untimed: makes ready the work of the next run() of `events` events (e.g. a backlog).
  virtual void prepare(long long events) = 0;
  // Does the work of `events` events; returns the seconds it took (Stopwatch::unstolen_seconds).
  virtual double run(long long events) = 0;
};

}  // namespace bench
