#include <doctest/doctest.h>

#include <limits>

#include "sluice/error.hpp"
#include "sluice/retry_policy.hpp"

using namespace sluice;
using std::chrono::milliseconds;

TEST_CASE("without jitter the backoff doubles from the initial delay up to the cap") {
  RetryPolicy policy;
  policy.initial_backoff = milliseconds(100);
  policy.max_backoff = milliseconds(1000);
  policy.jitter = 0;
  CHECK(policy.backoff(1, 7) == milliseconds(100));
  CHECK(policy.backoff(2, 7) == milliseconds(200));
  CHECK(policy.backoff(3, 7) == milliseconds(400));
  CHECK(policy.backoff(4, 7) == milliseconds(800));
  CHECK(policy.backoff(5, 7) == milliseconds(1000));
  CHECK(policy.backoff(30, 7) == milliseconds(1000));
}

TEST_CASE("jitter stays within its band and is reproducible for a seed") {
  RetryPolicy policy;
  policy.initial_backoff = milliseconds(1000);
  policy.jitter = 0.2;
  constexpr std::int64_t group = RetryPolicy::kJitterGroup;
  bool varied = false;
  for (std::int64_t seq = 1; seq <= 200 * group; seq += group / 2) {
    const auto delay = policy.backoff(1, seq);
    CHECK(delay >= milliseconds(800));
    CHECK(delay <= milliseconds(1200));
    CHECK(delay == policy.backoff(1, seq));
    varied = varied || delay != policy.backoff(1, 1);
  }
  CHECK(varied);
  RetryPolicy other = policy;
  other.seed = policy.seed + 1;
  int differing = 0;
  for (std::int64_t seq = 1; seq <= 50 * group; seq += group) {
    differing += other.backoff(1, seq) != policy.backoff(1, seq);
  }
  CHECK(differing > 40);
}

TEST_CASE("events enqueued close together share their jitter, so their retries fall due together") {
  RetryPolicy policy;
  policy.jitter = 0.2;
  constexpr std::int64_t group = RetryPolicy::kJitterGroup;
  for (std::int64_t seq = 3 * group; seq < 4 * group; ++seq) {
    CHECK(policy.backoff(2, seq) == policy.backoff(2, 3 * group));
  }
  int differing = 0;
  for (std::int64_t g = 1; g <= 50; ++g) {
    differing += policy.backoff(1, g * group) != policy.backoff(1, (g + 1) * group);
  }
  CHECK(differing > 40);
}

TEST_CASE("longest_span sums every delay at full jitter") {
  RetryPolicy policy;
  policy.max_attempts = 4;
  policy.initial_backoff = milliseconds(1000);
  policy.jitter = 0.5;
  CHECK(policy.longest_span() == milliseconds((1000 + 2000 + 4000) * 3 / 2));
  policy.max_attempts = 1;
  CHECK(policy.longest_span() == milliseconds(0));
}

TEST_CASE("validate names the field out of range") {
  RetryPolicy policy;
  policy.max_attempts = 0;
  CHECK_THROWS_WITH_AS(policy.validate(), doctest::Contains("max_attempts"), InvalidArgument);
  policy = RetryPolicy{};
  policy.jitter = 1.5;
  CHECK_THROWS_WITH_AS(policy.validate(), doctest::Contains("jitter"), InvalidArgument);
}

TEST_CASE("a huge max_backoff does not overflow") {
  RetryPolicy policy;
  policy.initial_backoff = Duration::max();
  policy.max_backoff = Duration::max();
  policy.multiplier = 1e300;
  policy.jitter = 0.9;
  for (std::int64_t seq = 1; seq <= 64 * RetryPolicy::kJitterGroup;
       seq += RetryPolicy::kJitterGroup) {
    CHECK(policy.backoff(1, seq) > milliseconds(0));
    CHECK(policy.backoff(40, seq) > milliseconds(0));
  }
  CHECK(policy.longest_span() == Duration::max());
  policy.initial_backoff = milliseconds(1);
  CHECK(policy.backoff(2000, 1) > milliseconds(0));
  CHECK(policy.longest_span() == Duration::max());
}

TEST_CASE("longest_span of billions of attempts is the capped delays summed, at once") {
  RetryPolicy policy;
  policy.max_attempts = std::numeric_limits<int>::max();
  policy.initial_backoff = milliseconds(1000);
  policy.max_backoff = milliseconds(4000);
  policy.jitter = 0;
  const long long capped_retries = std::numeric_limits<int>::max() - 3LL;
  CHECK(policy.longest_span() == milliseconds(1000 + 2000 + 4000 * capped_retries));
}

TEST_CASE("validate refuses a multiplier that is not a finite number") {
  RetryPolicy policy;
  policy.multiplier = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH_AS(policy.validate(), doctest::Contains("multiplier"), InvalidArgument);
  policy.multiplier = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH_AS(policy.validate(), doctest::Contains("multiplier"), InvalidArgument);
}
