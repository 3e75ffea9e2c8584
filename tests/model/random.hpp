// The model test's only source of randomness: splitmix64, so that a seed reproduces a sequence on
// every platform (std::uniform_int_distribution differs between standard libraries).
#pragma once

#include <cstdint>

namespace sluice::model {

// Mixes `x` into a well-spread 64-bit value; also used to hash (seed, consumer, event, attempt).
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Not thread-safe. A deterministic stream of numbers from one seed.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() { return mix(state_++ * 0x2545f4914f6cdd1dull); }
  // Uniform in [0, n); n > 0.
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
  // Uniform in [lo, hi].
  long long between(long long lo, long long hi) {
    return lo + static_cast<long long>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  bool chance(int percent) { return below(100) < percent; }

 private:
  std::uint64_t state_;
};

}  // namespace sluice::model
