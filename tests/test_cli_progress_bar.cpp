#include <doctest/doctest.h>

#include <sstream>

#include "progress_bar.hpp"

using sluice::cli::ProgressBar;

TEST_CASE("render shows the bar, percentage and counts") {
  CHECK(ProgressBar::render("prune", 250, 1000, 20) ==
        "prune [#####...............]  25% 250/1000");
  CHECK(ProgressBar::render("prune", 1000, 1000, 10) == "prune [##########] 100% 1000/1000");
  CHECK(ProgressBar::render("prune", 0, 0, 4) == "prune [####] 100% 0/0");
  CHECK(ProgressBar::render("prune", 5, 3, 3) == "prune [###] 100% 5/3");
}

TEST_CASE("a disabled bar draws nothing") {
  std::ostringstream out;
  {
    ProgressBar bar(out, "prune", 10, false, std::chrono::milliseconds(0));
    bar.update(5);
  }
  CHECK(out.str().empty());
}

TEST_CASE("an enabled bar redraws in place and clears its line at the end") {
  std::ostringstream out;
  {
    ProgressBar bar(out, "prune", 10, true, std::chrono::milliseconds(0));
    bar.update(5);
  }
  const std::string text = out.str();
  CHECK(text.rfind("\rprune [###############...............]  50% 5/10", 0) == 0);
  CHECK(text.back() == '\r');
}

TEST_CASE("a quick run draws nothing before show_after") {
  std::ostringstream out;
  {
    ProgressBar bar(out, "prune", 10, true, std::chrono::hours(1));
    bar.update(5);
  }
  CHECK(out.str().empty());
}
