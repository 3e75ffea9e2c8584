#include "lock_sharing.hpp"

#include <algorithm>
#include <thread>

namespace sluice {
namespace {

// A step shorter than this is followed by no gap: short steps leave short gaps often enough for
// a writer polling every 250 us to find one soon, and a sleep after each would cost more than
// the step. Longer steps are followed by 1% of their length, at least the 100 us a sleep costs
// anyway and at most 400 us, past the 250 us poll.
constexpr LockSharing::Clock::duration kHoldWorthAGap = std::chrono::milliseconds(1);
constexpr LockSharing::Clock::duration kMinGapAfterStep = std::chrono::microseconds(100);
constexpr LockSharing::Clock::duration kMaxGapAfterStep = std::chrono::microseconds(400);

// Between kSharedPeriod and kQuietPeriod, how much more holding before data_version is read
// again: a writer that got in through a short gap is noticed soon, at a few reads per second.
constexpr LockSharing::Clock::duration kLookEvery = std::chrono::milliseconds(50);

}  // namespace

LockSharing::LockSharing(DataVersion& version, bool on_file)
    : version_(version), on_file_(on_file) {}

void LockSharing::after_step(Clock::time_point began, Clock::duration held) {
  if (!on_file_) return;
  // The worker was idle, or between run_until_idle() calls, long enough for every waiting
  // writer to have had a try while the lock was free.
  if (last_step_end_ && began - *last_step_end_ >= kLongGap) {
    held_ = {};
    next_look_ = kSharedPeriod;
  }
  // Commits before the first step (the backlog itself) say nothing about writers to come.
  if (!version_at_gap_) version_at_gap_ = version_.read();
  held_ += held;
  if (held_ >= next_look_ && long_gap_due()) {
    std::this_thread::sleep_for(kLongGap);
    held_ = {};
    next_look_ = kSharedPeriod;
  } else if (held >= kHoldWorthAGap) {
    std::this_thread::sleep_for(std::clamp(held / 100, kMinGapAfterStep, kMaxGapAfterStep));
  }
  last_step_end_ = Clock::now();
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
