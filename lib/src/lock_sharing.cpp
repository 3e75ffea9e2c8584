#include "lock_sharing.hpp"

#include <thread>

namespace sluice {
namespace {

// Sluice's own writers (database.cpp) poll every 250 us: a gap of kShortGap lets their next try
// in. One of this process is seen waiting and gets it after the step it waited in; for one of
// another process, steps of kHoldWorthAGap or more add up to kShortGapEvery of holding before a
// gap, so it waits about that or one batch, and a drain alone spends about 2.5% of its time in
// them (the sleep overshoots by some 50 us). A gap after every such step (1% of its length, at
// least 100 us) cost 7-10% of a drain at batch 512, whose steps take about 2 ms. Shorter steps
// add nothing: the moments between them are free often enough for a poller.
constexpr LockSharing::Clock::duration kHoldWorthAGap = std::chrono::milliseconds(1);
constexpr LockSharing::Clock::duration kShortGapEvery = std::chrono::milliseconds(20);
constexpr LockSharing::Clock::duration kShortGap = std::chrono::microseconds(400);

// Between kSharedPeriod and kQuietPeriod, how much more holding before data_version is read
// again: a writer that got in through a short gap is noticed soon, at a few reads per second.
constexpr LockSharing::Clock::duration kLookEvery = std::chrono::milliseconds(50);

}  // namespace

LockSharing::LockSharing(DataVersion& version, const CommitSignal* signal)
    : version_(version), signal_(signal) {}

void LockSharing::after_step(Clock::time_point began, Clock::duration held) {
  const Clock::duration gap =
      gap_after(began, held, signal_ != nullptr && signal_->writer_waited_since(began));
  if (gap > Clock::duration::zero()) std::this_thread::sleep_for(gap);
  last_step_end_ = Clock::now();
}

LockSharing::Clock::duration LockSharing::gap_after(Clock::time_point began, Clock::duration held,
                                                    bool writer_waited) {
  if (signal_ == nullptr) return {};
  // The worker was idle, or between run_until_idle() calls, long enough for every waiting
  // writer to have had a try while the lock was free.
  if (last_step_end_ && began - *last_step_end_ >= kLongGap) {
    held_ = {};
    held_since_short_gap_ = {};
    next_look_ = kSharedPeriod;
  }
  // Commits before the first step (the backlog itself) say nothing about writers to come.
  if (!version_at_gap_) version_at_gap_ = version_.read();
  held_ += held;
  if (held_ >= next_look_ && long_gap_due()) {
    held_ = {};
    held_since_short_gap_ = {};
    next_look_ = kSharedPeriod;
    return kLongGap;
  }
  if (writer_waited) {
    held_since_short_gap_ = {};
    return kShortGap;
  }
  if (held < kHoldWorthAGap) return {};
  held_since_short_gap_ += held;
  if (held_since_short_gap_ < kShortGapEvery) return {};
  held_since_short_gap_ = {};
  return kShortGap;
}

bool LockSharing::long_gap_due() {
  const long long version = version_.read();
  if (version != *version_at_gap_ || held_ >= kQuietPeriod) {
    version_at_gap_ = version;
    return true;
  }
  next_look_ = held_ + kLookEvery;
  return false;
}

}  // namespace sluice
