// Text from the file never drives the operator's terminal: escape sequences in a consumer name,
// a header value, a handler's error or a discard note (OSC 0 sets the window title, CSI 2J
// clears the screen, CSI 8m hides text) are shown escaped by every human view, while --json
// keeps them exact.
#include <doctest/doctest.h>

#include "support/cli_fixture.hpp"

using namespace sluice;
using namespace sluice::test;
using nlohmann::json;

namespace {

const std::string kTitle = "\x1b]0;owned\x07";  // OSC 0: sets the window title
const std::string kClear = "\x1b[2J";           // CSI 2J: clears the screen
const std::string kHide =
    "\xC2\x9B"
    "8m";  // CSI 8m as U+009B: hides what follows

// Where the first control character in `text` is (C0 but a line break, DEL, C1 in UTF-8, a
// byte 0x80..0x9F that is no part of a UTF-8 character) as "\xHH at N"; empty when none is.
std::string control_in(const std::string& text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char c = byte(i);
    std::size_t length = c < 0x80                 ? 1
                         : c >= 0xC2 && c <= 0xDF ? 2
                         : c >= 0xE0 && c <= 0xEF ? 3
                         : c >= 0xF0 && c <= 0xF4 ? 4
                                                  : 0;
    for (std::size_t k = 1; k < length; ++k) {
      if (i + k >= text.size() || byte(i + k) < 0x80 || byte(i + k) > 0xBF) length = 0;
    }
    const bool control = length == 1   ? (c < 0x20 && c != '\n') || c == 0x7F
                         : length == 2 ? c == 0xC2 && byte(i + 1) <= 0x9F
                         : length == 0 ? c >= 0x80 && c <= 0x9F
                                       : false;
    if (control) {
      char where[32];
      std::snprintf(where, sizeof where, "\\x%02x at %zu", c, i);
      return where;
    }
    i += length == 0 ? 1 : length;
  }
  return "";
}

// A file whose consumer, header, errors and notes all carry terminal escapes: "billing" renamed,
// as a file written by anything else could name it.
std::string hostile_file(CliFixture& f) {
  f.init();
  f.enqueue_order(1, true);
  const std::string discarded = f.enqueue_order(2, true);
  std::string id;
  {
    SQLite::Database db = open_database(f.db_path, f.options());
    Outbox outbox(db, f.options());
    id = outbox
             .enqueue_now({.topic = "order.placed",
                           .payload = "{\"order\":3,\"fail\":true,\"note\":\"\xC2\x9B"
                                      "8m\x7f\"}",
                           .headers = {{"trace", "t" + kTitle + kClear}}})
             .id;
  }
  f.deliver();
  SQLite::Database db(f.db_path, SQLite::OPEN_READWRITE);
  SQLite::Statement rename(db, "UPDATE sluice_consumers SET name = ?");
  rename.bind(1, "bill" + kTitle + "ing");
  rename.exec();
  SQLite::Statement error(db, "UPDATE sluice_deliveries SET last_error = ?");
  error.bind(1, "declined" + kClear + kHide +
                    "\x9B"
                    "2J");
  error.exec();
  SQLite::Statement history(db,
                            "UPDATE sluice_deliveries SET history = json_replace(history, "
                            "'$[0][3]', ?) WHERE history IS NOT NULL");
  history.bind(1, "declined" + kClear);
  REQUIRE(history.exec() > 0);
  REQUIRE(
      f.sluice({"dlq", "discard", discarded, "--note", "refunded" + kHide + kTitle}).exit_code ==
      0);
  return id;
}

}  // namespace

TEST_CASE("every human view escapes the file's control characters; --json keeps them exact") {
  CliFixture f;
  const std::string id = hostile_file(f);
  const std::vector<std::vector<std::string>> views = {
      {"stats"},
      {"dlq", "list"},
      {"dlq", "list", "--group"},
      {"dlq", "list", "--discarded"},
      {"dlq", "show", id},
      {"show", id},
      {"events"},
      {"audit"},
      {"check"},
      {"workers"},
      {"consumer", "remove", "bill" + kTitle + "ing", "--dry-run", "--force"},
  };
  for (const auto& view : views) {
    CAPTURE(view[0] + (view.size() > 1 ? " " + view[1] : ""));
    const auto result = f.sluice(view);
    INFO(result.err);
    CHECK((result.exit_code == 0 || view[0] == "check"));
    CHECK(control_in(result.out) == "");
    CHECK(control_in(result.err) == "");
  }
  // What the escaped text reads as.
  CHECK(f.sluice({"stats"}).out.find("bill\\x1b]0;owned\\x07ing") != std::string::npos);
  const std::string shown = f.sluice({"dlq", "show", id}).out;
  CHECK(shown.find("declined\\x1b[2J\\u009b8m\\x9b2J") != std::string::npos);
  CHECK(f.sluice({"show", id}).out.find("trace: t\\x1b]0;owned\\x07\\x1b[2J") != std::string::npos);
  CHECK(f.sluice({"audit"}).out.find("refunded\\u009b8m\\x1b]0;owned\\x07") != std::string::npos);

  // --json: the exact bytes, as JSON escapes them (ESC as \u001b, U+009B as itself).
  const json dead = f.json({"dlq", "show", id});
  CHECK(dead["dead_letters"][0]["consumer"] == "bill" + kTitle + "ing");
  // A byte that is not UTF-8 cannot be in JSON: it comes out as U+FFFD.
  CHECK(dead["dead_letters"][0]["last_error"] == "declined" + kClear + kHide +
                                                     "\xEF\xBF\xBD"
                                                     "2J");
  CHECK(dead["event"]["headers"]["trace"] == "t" + kTitle + kClear);
  CHECK(f.json({"audit"})["entries"][0]["note"] == "refunded" + kHide + kTitle);
}

TEST_CASE("a name typed with a control character is refused; one read from the file is escaped") {
  CliFixture f;
  f.init();
  const auto enqueued =
      f.sluice({"enqueue", "--topic", "order" + kHide, "--payload", "{}", "--key", "k"});
  CHECK(enqueued.exit_code == 2);
  CHECK(enqueued.err.find("the topic contains a control character") != std::string::npos);
  CHECK(control_in(enqueued.err) == "");
  const auto missing = f.sluice({"show", "no-such" + kClear});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("no-such\\x1b[2J") != std::string::npos);
  CHECK(control_in(missing.err) == "");
}
