#include <doctest/doctest.h>

#include "sparkline.hpp"

using sluice::cli::sparkline;

TEST_CASE("samples scale from zero to the largest") {
  CHECK(sparkline({0, 1, 2, 3, 4, 5, 6, 7}) == "▁▂▃▄▅▆▇█");
  CHECK(sparkline({10, 5, 0}) == "█▄▁");
}

TEST_CASE("a flat zero series stays on the floor and any backlog shows above it") {
  CHECK(sparkline({0, 0, 0}) == "▁▁▁");
  CHECK(sparkline({1, 1000}) == "▂█");
  CHECK(sparkline({}) == "");
  CHECK(sparkline({-3, 2}) == "▁█");
}
