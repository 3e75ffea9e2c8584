#include <sluice/sluice.hpp>
#include <string>

// Delivers the incident exported to `path` once more, to the fixed handler.
sluice::DrainResult replay_incident(const std::string& path, sluice::Handler fixed_handler) {
  SQLite::Database db = sluice::open_database(path, {}, sluice::OpenMode::kExisting);
  sluice::Worker worker(db);
  worker.subscribe("billing", "order.placed", fixed_handler,
                   {.start_from = sluice::StartFrom::kOldest});
  sluice::replay_dead_letters(db, {});
  return worker.run_until_idle();  // the incident's event, delivered to the fixed handler
}
