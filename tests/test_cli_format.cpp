#include <doctest/doctest.h>

#include "format.hpp"
#include "usage_error.hpp"

using sluice::Duration;
using sluice::TimePoint;
using namespace sluice::cli;
using namespace std::chrono_literals;

TEST_CASE("format_time prints RFC 3339 in UTC with milliseconds") {
  CHECK(format_time(TimePoint(Duration(0))) == "1970-01-01T00:00:00.000Z");
  CHECK(format_time(TimePoint(Duration(1795948361123))) == "2026-11-29T10:32:41.123Z");
}

TEST_CASE("parse_time reads RFC 3339 with fractions and offsets") {
  CHECK(parse_time("2026-11-29T10:32:41Z") == TimePoint(Duration(1795948361000)));
  CHECK(parse_time("2026-11-29T10:32:41.123Z") == TimePoint(Duration(1795948361123)));
  CHECK(parse_time("2026-11-29t10:32:41.1z") == TimePoint(Duration(1795948361100)));
  CHECK(parse_time("2026-11-29 10:32:41.123456Z") == TimePoint(Duration(1795948361123)));
  CHECK(parse_time("2026-11-29T12:32:41+02:00") == TimePoint(Duration(1795948361000)));
  CHECK(parse_time("2026-11-29T05:02:41-05:30") == TimePoint(Duration(1795948361000)));
}

TEST_CASE("parse_time round-trips format_time") {
  const TimePoint t(Duration(1795948361987));
  CHECK(parse_time(format_time(t)) == t);
}

TEST_CASE("parse_time rejects malformed text naming it") {
  for (const char* bad :
       {"", "yesterday", "2026-11-29", "2026-11-29T10:32Z", "2026-13-01T00:00:00Z",
        "2026-02-30T00:00:00Z", "2026-11-29T24:00:00Z", "2026-11-29T10:32:41",
        "2026-11-29T10:32:41.Z", "2026-11-29T10:32:41Zjunk", "2026-11-29T10:32:41+2:00"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(parse_time(bad), doctest::Contains("invalid time"), UsageError);
  }
}

TEST_CASE("format_time shows a time past RFC 3339's years as its first or last millisecond") {
  CHECK(format_time(TimePoint::max()) == "9999-12-31T23:59:59.999Z");
  CHECK(format_time(TimePoint::min()) == "0000-01-01T00:00:00.000Z");
  CHECK(parse_time(format_time(TimePoint::max())) < TimePoint::max());
}

TEST_CASE("format_duration uses the largest units, at most two") {
  CHECK(format_duration(0ms) == "0s");
  CHECK(format_duration(250ms) == "250ms");
  CHECK(format_duration(30s) == "30s");
  CHECK(format_duration(15min) == "15m");
  CHECK(format_duration(12h) == "12h");
  CHECK(format_duration(24h * 7) == "7d");
  CHECK(format_duration(90min) == "1h30m");
  CHECK(format_duration(1h + 5s) == "1h");
  CHECK(format_duration(-30s) == "-30s");
}

TEST_CASE("format_duration reads like a duration: tenths under a minute, no ms above") {
  CHECK(format_duration(26813ms) == "26.8s");
  CHECK(format_duration(1050ms) == "1s");
  CHECK(format_duration(999ms) == "999ms");
  CHECK(format_duration(4min + 12s + 345ms) == "4m12s");
  CHECK(format_duration(1min + 5ms) == "1m");
}

TEST_CASE("parse_duration reads units and sums parts") {
  CHECK(parse_duration("30s") == 30s);
  CHECK(parse_duration("15m") == 15min);
  CHECK(parse_duration("12h") == 12h);
  CHECK(parse_duration("7d") == 24h * 7);
  CHECK(parse_duration("500ms") == 500ms);
  CHECK(parse_duration("1h30m") == 90min);
  CHECK(parse_duration("0s") == 0ms);
  for (Duration d : {Duration(250), Duration(30s), Duration(90min), Duration(24h * 7)}) {
    CHECK(parse_duration(format_duration(d)) == d);
  }
}

TEST_CASE("parse_duration rejects bad durations naming them") {
  for (const char* bad : {"", "30", "s", "30x", "-5s", "1.5h", "30 s", "7days", "99999999999d"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(parse_duration(bad), doctest::Contains("invalid duration"), UsageError);
  }
}

TEST_CASE("parse_duration refuses a duration whose parts sum past the limit") {
  CHECK(parse_duration("36500d") == 24h * 36500);
  std::string many_parts;
  for (int i = 0; i < 120; ++i) many_parts += "999999999d";
  for (const std::string& bad : {std::string("36500d1ms"), std::string("36499d25h"), many_parts}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(parse_duration(bad), doctest::Contains("at most 36500d"), UsageError);
  }
}

TEST_CASE("parse_time_or_ago takes RFC 3339 or a duration before now") {
  const TimePoint now(Duration(1795948361000));
  CHECK(parse_time_or_ago("2h", now) == now - 2h);
  CHECK(parse_time_or_ago("2026-11-29T10:32:41Z", now) == now);
  CHECK_THROWS_WITH_AS(parse_time_or_ago("last tuesday", now), doctest::Contains("invalid time"),
                       UsageError);
}
