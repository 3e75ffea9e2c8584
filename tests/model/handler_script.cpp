#include "handler_script.hpp"

#include <functional>

#include "random.hpp"

namespace sluice::model {
namespace {

std::uint64_t hash_of(std::uint64_t seed, const CallKey& call, std::uint64_t salt) {
  std::uint64_t h = mix(seed ^ salt);
  h = mix(h ^ std::hash<std::string>{}(call.consumer));
  h = mix(h ^ static_cast<std::uint64_t>(call.n));
  h = mix(h ^ static_cast<std::uint64_t>(call.attempt));
  h = mix(h ^ static_cast<std::uint64_t>(call.snoozes));
  h = mix(h ^ static_cast<std::uint64_t>(call.resets));
  // Mixed in only when set, so that every call without a breaker keeps the outcome it had.
  return call.probes == 0 ? h : mix(h ^ (0x9b0be5ULL + static_cast<std::uint64_t>(call.probes)));
}

}  // namespace

Scripted scripted_outcome(std::uint64_t seed, const CallKey& call) {
  const std::uint64_t h = hash_of(seed, call, 0x5c);
  const int roll = static_cast<int>(h % 100);
  const std::string tag = " (" + call.consumer + " n=" + std::to_string(call.n) + " attempt " +
                          std::to_string(call.attempt) + ")";
  // Half the handlers that fail or snooze do so before writing anything.
  const bool writes = ((h >> 20) & 1) == 0;
  if (roll < 68) return {Action::kOk, Duration(0), ""};
  if (roll < 80) return {Action::kRetry, Duration(0), "transient" + tag, false, writes};
  if (roll < 86) return {Action::kThrowAfterWrite, Duration(0), "thrown after write" + tag};
  if (roll < 89) return {Action::kDeadLetter, Duration(0), "permanent by ctx" + tag, false, writes};
  if (roll < 92)
    return {Action::kThrowPermanent, Duration(0), "permanent thrown" + tag, false, writes};
  if (call.snoozes >= 2) return {Action::kOk, Duration(0), ""};
  // The extreme: a snooze as long as a Duration holds is never due (not at once by overflow).
  if (roll == 92) return {Action::kSnooze, Duration::max(), "", false, writes};
  // Snoozes of 0 (due again at once) up to 2 s.
  return {Action::kSnooze, Duration(static_cast<long long>((h >> 8) % 3) * 1000), "", false,
          writes};
}

bool batch_throws(std::uint64_t seed, const CallKey& call) {
  return hash_of(seed, call, 0xba7c) % 100 < 5;
}

}  // namespace sluice::model
