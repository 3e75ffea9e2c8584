#include <doctest/doctest.h>

#include <sstream>

#include "table.hpp"

using namespace sluice::cli;

TEST_CASE("columns align to the widest cell, numbers right-aligned, no trailing spaces") {
  Table table({"CONSUMER", "PENDING", "LAG"});
  table.align_right(1);
  table.add_row({"billing", "3", "2s"});
  table.add_row({"email-sender", "1200", "15m"});
  std::ostringstream out;
  table.print(out, Style(false));
  CHECK(out.str() ==
        "CONSUMER      PENDING  LAG\n"
        "billing             3  2s\n"
        "email-sender     1200  15m\n");
}

TEST_CASE("colour codes and multibyte characters do not disturb alignment") {
  const Style colour(true);
  Table table({"STATE", "TREND", "N"});
  table.add_row({colour.red("dead"), "▁▂█", "1"});
  table.add_row({"delivered", "▁", "2"});
  std::ostringstream out;
  table.print(out, Style(false));
  CHECK(out.str() ==
        "STATE      TREND  N\n"
        "\x1b[31mdead\x1b[0m       ▁▂█    1\n"
        "delivered  ▁      2\n");
}

TEST_CASE("the header is bold only when colour is on") {
  Table table({"A"});
  std::ostringstream plain;
  table.print(plain, Style(false));
  CHECK(plain.str() == "A\n");
  std::ostringstream coloured;
  table.print(coloured, Style(true));
  CHECK(coloured.str() == "\x1b[1mA\x1b[0m\n");
}

TEST_CASE("an empty last cell leaves no trailing spaces") {
  Table table({"A", "ERROR"});
  table.add_row({"delivered", ""});
  std::ostringstream out;
  table.print(out, Style(false));
  CHECK(out.str() == "A          ERROR\ndelivered\n");
}

TEST_CASE("a row of the wrong width is refused") {
  Table table({"A", "B"});
  CHECK_THROWS_AS(table.add_row({"only one"}), std::invalid_argument);
}

TEST_CASE("display_width counts code points and skips colour codes") {
  CHECK(display_width("abc") == 3);
  CHECK(display_width("▁▂█") == 3);
  CHECK(display_width(Style(true).green("ok")) == 2);
}

TEST_CASE("colour is never wanted when output is not a terminal") {
  CHECK_FALSE(colour_wanted(-1));
}
