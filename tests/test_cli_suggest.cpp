#include <doctest/doctest.h>

#include "suggest.hpp"

using sluice::cli::nearest;

TEST_CASE("nearest suggests a close command and nothing for a word far from all") {
  const std::vector<std::string> commands{"stats", "events", "show", "tail", "check", "export"};
  CHECK(nearest("stat", commands) == "stats");
  CHECK(nearest("evnets", commands) == "events");
  CHECK(nearest("chekc", commands) == "check");
  CHECK(nearest("frobnicate", commands).empty());
  CHECK(nearest("x", commands).empty());
  CHECK(nearest("", commands).empty());
}
