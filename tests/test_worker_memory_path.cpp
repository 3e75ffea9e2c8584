// Worker(":memory:") would open a second, empty database of its own: an error, not silence.
#include <doctest/doctest.h>

#include <sluice/sluice.hpp>
#include <string>

using namespace sluice;

namespace {

std::string refusal(const std::string& path) {
  try {
    Worker worker(path);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a worker refuses to open an in-memory database by path and names what to do") {
  for (const std::string path : {":memory:", ""}) {
    const std::string message = refusal(path);
    CHECK(message.find("second, empty in-memory database") != std::string::npos);
    CHECK(message.find("Worker(SQLite::Database&)") != std::string::npos);
  }
}

TEST_CASE("an in-memory database is delivered from through its one connection") {
  SQLite::Database db = open_database(":memory:");
  Worker worker(db);
  int handled = 0;
  worker.subscribe("billing", "order.placed", [&](const Event&, Context&) { ++handled; });
  Outbox(db).enqueue_now({.topic = "order.placed"});
  CHECK(worker.run_until_idle().delivered == 1);
  CHECK(handled == 1);
}
