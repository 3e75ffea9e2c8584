#include "in_process_pipeline.hpp"

#include <SQLiteCpp/Statement.h>

namespace sluice::torture {

InProcessPipeline::InProcessPipeline(std::string path) : path_(std::move(path)) {
  options_.clock = clock_;
  options_.retry.max_attempts = 5;
  options_.retry.initial_backoff = std::chrono::seconds(1);
  options_.retry.jitter = 0;
  options_.busy_timeout = std::chrono::seconds(2);
  SQLite::Database db = open_database(path_, options_);
  db.exec(kAppliedTableSql);
  Worker worker(db, options_);
  subscribe(worker);
}

void InProcessPipeline::subscribe(Worker& worker) const {
  auto healed = healed_;
  auto max_attempt = max_attempt_;
  ConsumerOptions consumer_options;
  consumer_options.start_from = StartFrom::kOldest;
  worker.subscribe(
      "c0", kInProcessTopic,
      [healed, max_attempt](const Event& e, Context& ctx) {
        if (!*healed && e.payload.find("permanent") != std::string::npos) {
          throw PermanentError("torture: permanent failure");
        }
        SQLite::Statement insert(ctx.db(),
                                 "INSERT INTO torture_applied(consumer, event_id, seq, key) "
                                 "VALUES ('c0', ?, ?, ?)");
        insert.bind(1, e.id);
        insert.bind(2, static_cast<std::int64_t>(e.seq));
        insert.bind(3, e.key);
        insert.exec();
        int seen = *max_attempt;
        while (ctx.attempt() > seen && !max_attempt->compare_exchange_weak(seen, ctx.attempt())) {
        }
      },
      consumer_options);
}

std::vector<std::string> InProcessPipeline::enqueue(int count, bool permanent) {
  SQLite::Database db = open_database(path_, options_);
  Outbox outbox(db, options_);
  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) {
    NewEvent e;
    e.topic = kInProcessTopic;
    e.key = "k" + std::to_string(i % 3);
    e.payload = permanent ? "{\"permanent\":true}" : "{\"i\":" + std::to_string(i) + "}";
    ids.push_back(outbox.enqueue_now(e).id);
  }
  return ids;
}

void InProcessPipeline::deliver_once(SQLite::Database& db, const Options& options) {
  Worker worker(db, options);
  worker.subscribe("c0", kInProcessTopic, [](const Event&, Context&) {});
  worker.run_until_idle();
}

void InProcessPipeline::drain() {
  SQLite::Database db = open_database(path_, options_);
  Worker worker(db, options_);
  subscribe(worker);
  for (int round = 0; round < 20; ++round) {
    clock_->advance(std::chrono::hours(1));
    worker.run_until_idle();
  }
}

void InProcessPipeline::replay_all() {
  SQLite::Database db = open_database(path_, options_);
  replay_dead_letters(db, {}, options_);
}

AppliedCheck InProcessPipeline::check(const std::vector<std::string>& acked,
                                      const std::vector<std::string>& intended) {
  SQLite::Database db = open_database(path_, options_);
  return check_applied(db, acked, intended, {"c0"}, {});
}

}  // namespace sluice::torture
