// Fuzz target: the event codec. An event from the input is either refused with InvalidArgument by
// validation or stored and read back exactly as given; headers text in a row (which any writer of
// the file can put there) reads back as some headers, never a crash or a stray exception.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "event_codec.hpp"
#include "fuzz_input.hpp"
#include "sluice/database.hpp"
#include "sluice/error.hpp"
#include "sluice/inspect.hpp"
#include "sluice/outbox.hpp"

namespace {

constexpr std::size_t kMaxPayload = 64 * 1024;

SQLite::Database& database() {
  static SQLite::Database db = sluice::open_database(":memory:");
  return db;
}

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "event codec: %s: %s\n", what, detail.c_str());
  std::abort();
}

sluice::NewEvent event_from(sluice::fuzz::FuzzInput& in) {
  sluice::NewEvent event;
  event.topic = in.text();
  event.id = in.text();
  event.key = in.text();
  event.dedup_key = in.text();
  const int headers = in.byte() % 5;
  for (int i = 0; i < headers; ++i) {
    std::string name = in.text();
    event.headers[name] = in.text();
  }
  if (in.byte() & 1) {
    std::int64_t millis = 0;
    for (int i = 0; i < 8; ++i) millis = (millis << 8) | in.byte();
    event.not_before = sluice::TimePoint(sluice::Duration(millis));
  }
  event.payload = in.rest();
  return event;
}

// Stores `event` and reads it back: every field as given.
void round_trip(const sluice::NewEvent& event) {
  SQLite::Database& db = database();
  sluice::Outbox outbox(db);
  db.exec("BEGIN");
  try {
    const sluice::EnqueueResult result = outbox.enqueue(event);
    if (result.duplicate()) fail("duplicate in an empty file", result.id);
    const sluice::Event stored = sluice::find_event(db, result.id);
    if (stored.topic != event.topic || stored.payload != event.payload || stored.key != event.key ||
        stored.dedup_key != event.dedup_key || stored.headers != event.headers ||
        stored.not_before != event.not_before || (!event.id.empty() && stored.id != event.id)) {
      fail("stored event differs", result.id);
    }
  } catch (const sluice::InvalidArgument& e) {
    fail("validated event refused on enqueue", e.what());
  }
  db.exec("ROLLBACK");
}

// A row whose headers column holds `text`, as another writer of the file may leave it.
void read_foreign_headers(const std::string& text) {
  SQLite::Database& db = database();
  db.exec("BEGIN");
  SQLite::Statement insert(db,
                           "INSERT INTO sluice_events (id, topic, payload, headers, created_at) "
                           "VALUES ('foreign', 't', '{}', ?, 0)");
  insert.bind(1, text);
  insert.exec();
  try {
    sluice::find_event(db, "foreign");
  } catch (const sluice::Error&) {
    // A clear refusal is fine; anything else escapes and fails the run.
  }
  db.exec("ROLLBACK");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  sluice::fuzz::FuzzInput in(data, size);
  if (in.byte() % 4 == 0) {
    read_foreign_headers(in.rest());
    return 0;
  }
  const sluice::NewEvent event = event_from(in);
  try {
    sluice::validate_new_event(event, kMaxPayload);
  } catch (const sluice::InvalidArgument&) {
    return 0;
  }
  round_trip(event);
  return 0;
}
