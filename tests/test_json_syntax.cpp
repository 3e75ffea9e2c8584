#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

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

// Found by the json_syntax fuzz target (libFuzzer): "1E114414114" was accepted, and nlohmann,
// which reads numbers with strtod, refuses a document with a number past a double's range.
TEST_CASE("a number too large for a double is refused as nlohmann refuses it; a tiny one is 0") {
  const std::string digits_309 = "1" + std::string(308, '0');
  const std::string digits_308 = "9" + std::string(307, '9');
  const std::vector<std::string> accepted = {"1e-400",
                                             "-1e-400",
                                             "0e99999999999",
                                             "0.0001e311",
                                             "1.7976931348623157e308",
                                             digits_308,
                                             digits_309 + "e-10",
                                             "0." + std::string(400, '0') + "1e10",
                                             "[1e308, -1e308]"};
  for (const std::string& text : accepted) {
    CAPTURE(text);
    CHECK(is_valid_json(text));
    CHECK(nlohmann::json::accept(text));
  }
  const std::vector<std::string> refused = {"1E114414114",
                                            "1e400",
                                            "-1e309",
                                            "1.7976931348623159e308",
                                            "2" + std::string(308, '0'),
                                            digits_309 + "0",
                                            "{\"a\": [1e999]}",
                                            std::string(400, '1') + "e-10"};
  for (const std::string& text : refused) {
    CAPTURE(text);
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
