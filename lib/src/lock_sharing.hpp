// When a worker at full drain leaves SQLite's write lock free, so that the app's other writers
// get it too. SQLite's lock is not fair: a waiting writer gets it only if one of its tries falls
// in a moment when nobody holds it, and a worker that begins its next transaction right after
// committing leaves almost none.
//
// Two kinds of writer wait for the lock, and each needs its own kind of gap:
// - sluice's own connections try every 250 us (database.cpp): right after a step during which
//   one of this process tried (CommitSignal::note_writer_waiting), and after every 20 ms of
//   holding in steps of a millisecond or more (for one in another process, which the worker
//   cannot see), the worker leaves it free for 400 us.
// - any other connection with a busy timeout (Python's sqlite3, the sqlite3 shell, another
//   driver) uses SQLite's default busy handler, which sleeps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50,
//   50 ms and then 100 ms between tries. Short gaps catch it only by luck; a pause longer than
//   100 ms catches every such writer waiting when it begins. Those pauses cost throughput, so
//   the worker leaves one after kSharedPeriod of holding the lock while other connections commit
//   (PRAGMA data_version), and after kQuietPeriod otherwise, so that a writer nobody has seen yet
//   still gets in well within a 5 s busy timeout.
#pragma once

#include <chrono>
#include <optional>

#include "commit_signal.hpp"
#include "data_version.hpp"

namespace sluice {

// Not thread-safe: used by the worker's thread, with the worker's connection.
class LockSharing {
 public:
  using Clock = std::chrono::steady_clock;

  // The longest pause: longer than the default busy handler's longest sleep (100 ms), with room
  // for a writer whose thread wakes late.
  static constexpr Clock::duration kLongGap = std::chrono::milliseconds(110);
  // Lock holding between long gaps while other connections commit: a writer that keeps writing
  // waits at most about kSharedPeriod + kLongGap.
  static constexpr Clock::duration kSharedPeriod = std::chrono::milliseconds(600);
  // Lock holding between long gaps while no other connection commits: what a writer's first
  // write may wait, and 3.5% of throughput at most when nobody else writes.
  static constexpr Clock::duration kQuietPeriod = std::chrono::seconds(3);

  // `version` reads the worker's connection; `signal` is its file's (nullptr for an in-memory
  // database, which no other connection can wait for: the worker then never pauses).
  LockSharing(DataVersion& version, const CommitSignal* signal);

  // After a step that began at `began` and held the write lock for `held` at its longest
  // stretch: leaves the lock free (sleeps) for as long as is due, if anything.
  void after_step(Clock::time_point began, Clock::duration held);

  // The gap due after such a step, as after_step() would sleep it, `writer_waited` if a sluice
  // writer of this process tried for the lock during the step (exposed for tests: it does not
  // sleep, and updates what later gaps depend on as if it had).
  Clock::duration gap_after(Clock::time_point began, Clock::duration held, bool writer_waited);

 private:
  // Whether a long gap is due now; reads data_version when it may be.
  bool long_gap_due();

  DataVersion& version_;
  const CommitSignal* signal_;
  // Lock holding since the lock was last free for kLongGap or more.
  Clock::duration held_{};
  // Holding in steps of a millisecond or more since the last gap.
  Clock::duration held_since_short_gap_{};
  // Holding at which long_gap_due() looks again.
  Clock::duration next_look_ = kSharedPeriod;
  // data_version when the last long gap began (or at the first step).
  std::optional<long long> version_at_gap_;
  std::optional<Clock::time_point> last_step_end_;
};

}  // namespace sluice
