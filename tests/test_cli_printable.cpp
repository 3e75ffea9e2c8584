#include <doctest/doctest.h>

#include "printable.hpp"

using sluice::cli::printable;

TEST_CASE("printable escapes C0, DEL and C1 controls, in UTF-8 or as lone bytes") {
  CHECK(printable("\x1b]0;owned\x07") == "\\x1b]0;owned\\x07");
  CHECK(printable("\x1b[2J\x1b[8m") == "\\x1b[2J\\x1b[8m");
  CHECK(printable("a\nb\tc\rd") == "a\\x0ab\\x09c\\x0dd");
  CHECK(printable(std::string("nul\0", 4)) == "nul\\x00");
  CHECK(printable("del\x7f") == "del\\x7f");
  CHECK(printable("csi\xC2\x9B"
                  "2J") == "csi\\u009b2J");
  CHECK(printable("\xC2\x80") == "\\u0080");
  CHECK(printable("lone\x9B"
                  "2J") == "lone\\x9b2J");
}

TEST_CASE(
    "printable keeps text: ASCII, UTF-8 whose bytes lie in 80..9F, bytes that are not UTF-8") {
  CHECK(printable("order.placed 42 'x' \\ \"q\"") == "order.placed 42 'x' \\ \"q\"");
  CHECK(printable("caf\xC3\xA9 \xE2\x82\xAC \xE2\x80\xA6 \xF0\x9F\x98\x80 \xC2\xA0") ==
        "caf\xC3\xA9 \xE2\x82\xAC \xE2\x80\xA6 \xF0\x9F\x98\x80 \xC2\xA0");
  CHECK(printable("\xFF\xA0") == "\xFF\xA0");
  CHECK(printable("").empty());
}
