// Scenario 4: the fault VFS fails the Nth I/O call, for N = 1, 2, ... until the operation
// completes, once and persistently, across enqueue, delivery, dead-lettering, replay and prune;
// and disk full during delivery.
#include <SQLiteCpp/Statement.h>

#include <filesystem>
#include <functional>
#include <set>
#include <sluice/sluice.hpp>

#include "fault_vfs.hpp"
#include "file_state.hpp"
#include "in_process_pipeline.hpp"
#include "scenario.hpp"
#include "temp_dir.hpp"

namespace sluice::torture {

namespace {

constexpr const char* kFaultVfsName = "torture-fault";

// One operation swept: how to build its starting file and how to run it on a faulty connection.
struct SweptOperation {
  const char* name;
  // Fills the template file; returns the IDs every run must end up applying once.
  std::function<std::vector<std::string>(InProcessPipeline&)> prepare;
  // Runs the operation; returns an event ID the operation itself acknowledged, if any.
  std::function<std::string(SQLite::Database&, InProcessPipeline&)> run;
};

std::vector<SweptOperation> swept_operations() {
  auto deliver = [](SQLite::Database& db, InProcessPipeline& p) {
    Worker worker(db, p.options());
    p.subscribe(worker);
    worker.run_until_idle();
    return std::string();
  };
  return {
      {"enqueue", [](InProcessPipeline&) { return std::vector<std::string>{}; },
       [](SQLite::Database& db, InProcessPipeline& p) {
         Outbox outbox(db, p.options());
         NewEvent e;
         e.topic = kInProcessTopic;
         e.id = "swept-enqueue";
         e.payload = "{\"swept\":true}";
         return outbox.enqueue_now(e).id;
       }},
      {"deliver", [](InProcessPipeline& p) { return p.enqueue(6); }, deliver},
      // Each event ends dead-lettered (and not applied) or, when the fault stopped its first
      // attempt, pending; the replay after the fault applies each once.
      {"dead-letter", [](InProcessPipeline& p) { return p.enqueue(4, true); }, deliver},
      {"replay",
       [](InProcessPipeline& p) {
         std::vector<std::string> ids = p.enqueue(4, true);
         p.drain();
         return ids;
       },
       [](SQLite::Database& db, InProcessPipeline& p) {
         replay_dead_letters(db, {}, p.options());
         return std::string();
       }},
      // Delivered history, dead letters and undelivered events: prune may delete only the first.
      {"prune",
       [](InProcessPipeline& p) {
         std::vector<std::string> ids = p.enqueue(6);
         p.drain();
         for (std::string& id : p.enqueue(2, true)) ids.push_back(std::move(id));
         p.drain();
         for (std::string& id : p.enqueue(2)) ids.push_back(std::move(id));
         return ids;
       },
       [](SQLite::Database& db, InProcessPipeline& p) {
         p.clock().advance(std::chrono::hours(100));
         PruneOptions prune_options;
         prune_options.force = true;
         prune_options.batch_size = 2;
         prune(db, Duration(0), prune_options, p.options());
         return std::string();
       }},
  };
}

void copy_file(const std::string& from, const std::string& to) {
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
}

// One fault point: runs `op` on a copy of the template with `plan` armed; then checks that
// nothing is marked delivered without its effect and that a fault-free drain applies
// everything once.
void run_fault_point(const SweptOperation& op, const std::string& template_path,
                     const std::vector<std::string>& expected, FaultVfs& vfs, const FaultPlan& plan,
                     const TempDir& dir, ScenarioResult& result, bool& completed) {
  const std::string path = dir.file(std::string("work-") + op.name + ".db");
  copy_file(template_path, path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
  InProcessPipeline pipeline(path);
  std::string acked;
  bool failed = false;
  {
    SQLite::Database db(path, SQLite::OPEN_READWRITE, 0, vfs.name().c_str());
    vfs.arm(plan);
    try {
      configure_connection(db, pipeline.options());
      ensure_schema(db);
      acked = op.run(db, pipeline);
    } catch (const Error&) {
      failed = true;
    } catch (const std::exception& e) {
      failed = true;
      result.fail(std::string(op.name) + " at I/O call " + std::to_string(plan.fail_at) +
                  ": non-sluice exception: " + e.what());
    }
    vfs.disarm();
  }
  completed = !failed && vfs.faults() == 0;
  long long dead_applied = 0;
  {
    SQLite::Database db = open_database(path, pipeline.options());
    result.lost += delivered_without_effect(db, "c0");
    SQLite::Statement applied(db, "SELECT count(*) FROM torture_applied WHERE event_id = ?");
    for (const std::string& id : dead_letter_ids(db)) {
      applied.bind(1, id);
      applied.executeStep();
      dead_applied += applied.getColumn(0).getInt64();
      applied.reset();
    }
  }
  result.unexpected += dead_applied;
  // The fault is gone and the handler fixed: the operator replays what is dead, the worker drains.
  pipeline.heal();
  pipeline.replay_all();
  pipeline.drain();
  std::vector<std::string> acked_ids = expected;
  if (!acked.empty()) acked_ids.push_back(acked);
  std::vector<std::string> intended = expected;
  intended.push_back("swept-enqueue");
  const AppliedCheck check = pipeline.check(acked_ids, intended);
  result.events += check.events;
  result.lost += check.lost;
  result.double_applied += check.double_applied;
  result.unexpected += check.unexpected;
  if (check.integrity != "ok") result.integrity = check.integrity;
  ++result.runs;
}

}  // namespace

ScenarioResult run_io_error_sweep(const SuiteConfig& config) {
  ScenarioResult result("4 I/O error sweep");
  TempDir dir;
  FaultVfs vfs(kFaultVfsName);
  const long long stride = config.count(4, 1);
  std::string points;
  for (const SweptOperation& op : swept_operations()) {
    const std::string template_path = dir.file(std::string("template-") + op.name + ".db");
    std::vector<std::string> expected;
    {
      InProcessPipeline pipeline(template_path);
      expected = op.prepare(pipeline);
    }
    for (bool persistent : {false, true}) {
      long long n = 1;
      bool completed = false;
      for (; !completed && n < 20000; n += stride) {
        FaultPlan plan{.fail_at = n, .persistent = persistent, .error = SQLITE_IOERR};
        run_fault_point(op, template_path, expected, vfs, plan, dir, result, completed);
      }
      points += std::string(points.empty() ? "" : " ") + op.name + (persistent ? "/p=" : "/1=") +
                std::to_string(n - stride);
      if (!completed) result.fail(std::string(op.name) + " never completed under the sweep");
    }
  }
  result.notes = "calls swept (stride " + std::to_string(stride) + "): " + points;
  return result;
}

ScenarioResult run_disk_full(const SuiteConfig& config) {
  ScenarioResult result("4 disk full");
  TempDir dir;
  FaultVfs vfs(kFaultVfsName);
  long long storage_full_errors = 0;
  long long rounds_hit = 0;
  for (long long round = 0; round < config.count(3, 20); ++round) {
    const std::string path = dir.file("full-" + std::to_string(round) + ".db");
    InProcessPipeline pipeline(path);
    const std::vector<std::string> ids = pipeline.enqueue(8);
    {
      SQLite::Database db(path, SQLite::OPEN_READWRITE, 0, vfs.name().c_str());
      configure_connection(db, pipeline.options());
      Worker worker(db, pipeline.options());
      pipeline.subscribe(worker);
      vfs.arm({.fail_at = 1 + round % 3,
               .persistent = true,
               .error = SQLITE_FULL,
               .calls = kWrite | kTruncate});
      for (int attempt = 0; attempt < 5; ++attempt) {
        try {
          worker.run_until_idle();
        } catch (const StorageFullError&) {
          ++storage_full_errors;
        } catch (const std::exception& e) {
          result.fail(std::string("disk full raised something else than StorageFullError: ") +
                      e.what());
        }
        pipeline.clock().advance(std::chrono::minutes(10));
      }
      if (vfs.faults() > 0) ++rounds_hit;
      vfs.disarm();
      worker.run_until_idle();
    }
    pipeline.drain();
    SQLite::Database db = open_database(path, pipeline.options());
    for (const ConsumerStats& s : consumer_stats(db, pipeline.options())) {
      if (s.dead != 0) result.fail(std::to_string(s.dead) + " dead letters caused by disk full");
      if (s.retries_total != 0) {
        result.fail("disk full spent " + std::to_string(s.retries_total) + " handler attempts");
      }
    }
    if (pipeline.max_attempt_applied() > 1) {
      result.fail("a handler ran as attempt " + std::to_string(pipeline.max_attempt_applied()) +
                  " after disk full; expected 1");
    }
    const AppliedCheck check = pipeline.check(ids, ids);
    result.events += check.events;
    result.lost += check.lost;
    result.double_applied += check.double_applied;
    result.unexpected += check.unexpected;
    if (check.integrity != "ok") result.integrity = check.integrity;
    ++result.runs;
  }
  if (rounds_hit != result.runs) {
    result.fail("the disk filled up in only " + std::to_string(rounds_hit) + " of " +
                std::to_string(result.runs) + " rounds");
  }
  result.notes = "SQLITE_FULL on every write from call 1-3; StorageFullError raised " +
                 std::to_string(storage_full_errors) + " times";
  return result;
}

}  // namespace sluice::torture
