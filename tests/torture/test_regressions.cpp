// Library bugs the torture suite found, each pinned by the smallest test that shows it.
#include <doctest/doctest.h>

#include <sluice/sluice.hpp>

#include "temp_dir.hpp"

namespace sluice::torture {
namespace {

// Deliverer::has_work() steps its SELECT and returns without reset(), so the worker's connection
// keeps a read transaction open, through the claim's BEGIN IMMEDIATE ... COMMIT and after it.
// When any other connection commits while that snapshot is held (here: during an
// outside-transaction handler), the worker's next BEGIN IMMEDIATE must upgrade the stale
// snapshot and fails at once with SQLITE_BUSY_SNAPSHOT (517), whatever the busy timeout. Under
// the torture suite's kill scenario (producer thread + started worker) this shows as endless
// "worker step failed ... code 517" and "could not release its claim on stop", and
// run_until_idle() throwing DatabaseError 517 to the caller.
TEST_CASE("regression: has_work leaves a stale read snapshot, next write fails with BUSY_SNAPSHOT") {
  TempDir dir;
  const std::string path = dir.file("snapshot.db");
  SQLite::Database producer = open_database(path);
  Outbox outbox(producer);
  int delivered = 0;
  Worker worker(path);
  ConsumerOptions outside;
  outside.mode = DeliveryMode::kOutsideTransaction;
  worker.subscribe(
      "c0", "t",
      [&](const Event&, Context&) {
        ++delivered;
        NewEvent other;
        other.topic = "unrelated";
        outbox.enqueue_now(other);
      },
      outside);
  NewEvent e;
  e.topic = "t";
  outbox.enqueue_now(e);
  int code = 0;
  try {
    worker.run_until_idle();
  } catch (const DatabaseError& error) {
    code = error.code();
  }
  CHECK(code == 0);
  CHECK(delivered == 1);
}

}  // namespace
}  // namespace sluice::torture
