#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "json_syntax.hpp"

using sluice::is_valid_json;

TEST_CASE("valid JSON documents are accepted") {
  for (const char* text :
       {"{}", "[]", " {\"a\": [1, -2.5e+3, true, false, null, \"x\\n\\u00e9\"]} ", "0", "-0.1",
        "\"\"", "[[[]]]", "{\"a\":{\"b\":{}}}", "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"", "1E9"}) {
    CHECK_MESSAGE(is_valid_json(text), text);
  }
}

TEST_CASE("invalid JSON is refused") {
  for (const char* text : {"",
                           " ",
                           "{",
                           "}",
                           "[1,]",
                           "{\"a\"}",
                           "{\"a\":}",
                           "{a:1}",
                           "01",
                           "1.",
                           ".5",
                           "-",
                           "1e",
                           "tru",
                           "nul",
                           "\"\\x\"",
                           "\"\\u12\"",
                           "\"a",
                           "[1 2]",
                           "{} {}",
                           "'a'",
                           "\"\x01\"",
                           "\"\xc0\xaf\"",
                           "\"\xed\xa0\x80\"",
                           "\"\xf5\x80\x80\x80\"",
                           "[1],"}) {
    CHECK_FALSE_MESSAGE(is_valid_json(text), text);
  }
}

// Found by the json_syntax fuzz target: "\ud83d\ud83d" was accepted, and every reader of the
// payload built on nlohmann (the CLI, the console, a C++ handler) then failed to parse it.
TEST_CASE("an escaped surrogate must be half of a pair, as nlohmann and I-JSON require") {
  CHECK(is_valid_json("\"\\ud83d\\ude00\""));
  CHECK(is_valid_json("\"\\uD83D\\uDE00 and \\uffff\""));
  for (const char* text :
       {"\"\\ud83d\"", "\"\\ude00\"", "\"\\ud83d\\ud83d\\ude00\"", "\"\\ud83dx\"", "\"\\ud83d\\n\"",
        "\"\\ud83d\\u0041\"", "\"\\ude00\\ud83d\"", "\"\\udbff\""}) {
    CAPTURE(std::string(text));
    CHECK_FALSE(is_valid_json(text));
    CHECK_FALSE(nlohmann::json::accept(text));
  }
}

TEST_CASE("nesting is bounded instead of recursing without limit") {
  const std::string deep_ok =
      std::string(sluice::kMaxJsonDepth, '[') + std::string(sluice::kMaxJsonDepth, ']');
  CHECK(is_valid_json(deep_ok));
  const std::string too_deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_FALSE(is_valid_json(too_deep));
}

TEST_CASE("agrees with nlohmann on random mutations of a document") {
  const std::string seed =
      R"({"order":{"id":"A-1","lines":[{"sku":"x","qty":2,"price":9.5}],"paid":true,"note":null}})";
  std::mt19937 random(42);
  const std::string alphabet = "{}[],:\"\\ 0123456789.eE+-truefalsnul\x80\xc3\xa9";
  int disagreements = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text = seed;
    const int edits = 1 + static_cast<int>(random() % 3);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = random() % text.size();
      const char c = alphabet[random() % alphabet.size()];
      switch (random() % 3) {
        case 0:
          text[at] = c;
          break;
        case 1:
          text.insert(text.begin() + static_cast<long>(at), c);
          break;
        default:
          text.erase(text.begin() + static_cast<long>(at));
          break;
      }
      if (text.empty()) text = "x";
    }
    disagreements += is_valid_json(text) != nlohmann::json::accept(text);
  }
  CHECK(disagreements == 0);
}
