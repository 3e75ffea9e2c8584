#include <array>
#include <mutex>
#include <random>

#include "sluice/event.hpp"

namespace sluice {
namespace {

constexpr char kCrockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

// The last ID's parts, so IDs made in the same millisecond still increase.
struct IdState {
  std::mutex mutex;
  std::mt19937_64 random{std::random_device{}()};
  long long last_ms = -1;
  std::uint64_t random_high = 0;  // 16 bits used
  std::uint64_t random_low = 0;   // 64 bits used
};

IdState& id_state() {
  static IdState state;
  return state;
}

}  // namespace

std::string generate_event_id(TimePoint now) {
  IdState& state = id_state();
  std::lock_guard lock(state.mutex);
  long long ms = now.time_since_epoch().count();
  if (ms <= state.last_ms) {
    ms = state.last_ms;
    if (++state.random_low == 0) ++state.random_high;
  } else {
    state.last_ms = ms;
    state.random_high = state.random() & 0x7fff;  // top bit clear leaves room to increment
    state.random_low = state.random();
  }
  std::array<char, 26> out{};
  auto time_bits = static_cast<std::uint64_t>(ms);
  for (int i = 9; i >= 0; --i) {
    out[i] = kCrockford[time_bits & 31];
    time_bits >>= 5;
  }
  // 80 random bits: 16 high, 64 low, written as 16 base32 digits from the least significant.
  std::uint64_t low = state.random_low;
  std::uint64_t high = state.random_high;
  for (int i = 25; i >= 10; --i) {
    out[i] = kCrockford[low & 31];
    low = (low >> 5) | ((high & 31) << 59);
    high >>= 5;
  }
  return std::string(out.data(), out.size());
}

}  // namespace sluice
