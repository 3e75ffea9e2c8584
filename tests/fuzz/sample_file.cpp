#include "sample_file.hpp"

#include "sluice/database.hpp"
#include "sluice/outbox.hpp"
#include "sluice/worker.hpp"

namespace sluice::fuzz {

void write_sample_file(const std::string& path) {
  Worker worker(path);
  worker.subscribe("billing", "orders", [](const Event& event, Context& context) {
    if (event.key == "o2") context.dead_letter("card declined");
  });
  // A worker that never runs: mail's events stay pending.
  Worker idle(path);
  idle.subscribe("mail", "orders", [](const Event&, Context&) {});
  SQLite::Database db = open_database(path);
  Outbox outbox(db);
  outbox.enqueue_now(NewEvent{.topic = "orders",
                              .payload = R"({"order":1,"total":12.5})",
                              .headers = {{"trace", "t-1"}},
                              .key = "o1",
                              .id = "e1"});
  outbox.enqueue_now(NewEvent{.topic = "orders",
                              .payload = R"(["o2",{"x":null}])",
                              .key = "o2",
                              .id = "e2",
                              .dedup_key = "o2:placed"});
  worker.run_until_idle();
}

}  // namespace sluice::fuzz
