// Fuzz target: the CLI's readings of operator text: durations (--busy-timeout, --older-than,
// --watch), RFC 3339 times and "2h ago" forms (--since), and the filters of `events` and `dlq`
// run against a file. Bad text must be a UsageError naming it (exit 2), a filter naming nothing
// known a NotFound or InvalidArgument; a time read back from its printed form is the same time.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "format.hpp"
#include "fuzz_input.hpp"
#include "sample_file.hpp"
#include "scratch_directory.hpp"
#include "sluice/database.hpp"
#include "sluice/dead_letters.hpp"
#include "sluice/error.hpp"
#include "sluice/inspect.hpp"
#include "usage_error.hpp"

namespace {

using sluice::cli::UsageError;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "cli text: %s\n", what.c_str());
  std::abort();
}

SQLite::Database& database() {
  static SQLite::Database db = [] {
    const std::string path = sluice::fuzz::scratch_directory() + "/cli_text.sluice";
    sluice::fuzz::write_sample_file(path);
    return sluice::open_database(path, {}, sluice::OpenMode::kReadOnly);
  }();
  return db;
}

const sluice::TimePoint kNow = sluice::TimePoint(sluice::Duration(1'800'000'000'000));

void durations(const std::string& text) {
  try {
    const sluice::Duration d = sluice::cli::parse_duration(text);
    if (d.count() < 0) fail("negative duration from '" + text + "'");
    sluice::cli::format_duration(d);
  } catch (const UsageError&) {
  }
}

void times(const std::string& text) {
  try {
    const sluice::TimePoint t = sluice::cli::parse_time(text);
    const std::string printed = sluice::cli::format_time(t);
    // Inside years 0 to 9999 the printed form is exact to the millisecond.
    if (sluice::cli::parse_time(printed) != t && printed.rfind("0000-", 0) != 0 &&
        printed.rfind("9999-12-31T23:59:59.999", 0) != 0) {
      fail("'" + text + "' prints as '" + printed + "', which reads as another time");
    }
  } catch (const UsageError&) {
  }
  try {
    sluice::cli::parse_time_or_ago(text, kNow);
  } catch (const UsageError&) {
  }
}

void filters(sluice::fuzz::FuzzInput& in) {
  sluice::EventFilter events;
  events.topic = in.text();
  events.key = in.text();
  events.event_id = in.text();
  events.dedup_key = in.text();
  events.consumer = in.text();
  events.state = in.text();
  events.limit = 1 + in.byte();
  events.after_seq = in.byte() % 4;
  sluice::DeadLetterFilter letters;
  letters.consumer = in.text();
  letters.topic = in.text();
  letters.error_contains = in.text();
  letters.include_discarded = in.byte() & 1;
  if (in.byte() & 1) letters.event_ids.push_back(in.text());
  try {
    const std::string since = in.text();
    if (!since.empty()) events.since = letters.since = sluice::cli::parse_time_or_ago(since, kNow);
  } catch (const UsageError&) {
    return;
  }
  try {
    sluice::list_events(database(), events);
  } catch (const sluice::NotFound&) {
  } catch (const sluice::InvalidArgument&) {
  }
  try {
    sluice::list_dead_letters(database(), letters);
  } catch (const sluice::NotFound&) {
  } catch (const sluice::InvalidArgument&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  sluice::fuzz::FuzzInput in(data, size);
  switch (in.byte() % 3) {
    case 0:
      durations(in.rest());
      break;
    case 1:
      times(in.rest());
      break;
    default:
      filters(in);
      break;
  }
  return 0;
}
