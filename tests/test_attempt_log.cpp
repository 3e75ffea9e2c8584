#include <doctest/doctest.h>

#include <string>

#include "attempt_log.hpp"

using sluice::TimePoint;

namespace {

TimePoint at_millis(long long ms) { return TimePoint(sluice::Duration(ms)); }

}  // namespace

TEST_CASE("an attempt log of one entry is [[attempt, at, outcome, error]]") {
  std::string log = "left over from the last call";
  sluice::write_attempt_log(log, 2, at_millis(1764000000123), "retry", "gateway timeout");
  CHECK(log == R"([[2,1764000000123,"retry","gateway timeout"]])");
  sluice::write_attempt_log(log, 1, at_millis(0), "crashed", "");
  CHECK(log == R"([[1,0,"crashed",null]])");
}

TEST_CASE("an error's quotes, backslashes and control characters are escaped; other bytes kept") {
  std::string log;
  sluice::write_attempt_log(log, 1, at_millis(5), "permanent",
                            "card \"4242\"\\ declined\n\ttwice\x01 \xc3\xa9");
  CHECK(log ==
        "[[1,5,\"permanent\",\"card \\\"4242\\\"\\\\ declined\\u000a\\u0009twice\\u0001 "
        "\xc3\xa9\"]]");
}
