// Scenario 10: power cuts at random writes or syncs of a producing and delivering child, with
// unsynced writes dropped, partly landed or torn. FULL keeps every acknowledged event; NORMAL
// may lose only the newest commits of the cut, never half of one.
#include <SQLiteCpp/Statement.h>
#include <sys/wait.h>

#include <random>
#include <set>
#include <sluice/sluice.hpp>

#include "file_state.hpp"
#include "ledger.hpp"
#include "pipeline.hpp"
#include "power_loss_vfs.hpp"
#include "scenario.hpp"

namespace sluice::torture {

namespace {

// What one cut left: acknowledged events missing, and whether they were only the newest.
struct CutDamage {
  std::vector<std::string> missing;
  bool only_newest = true;
  long long half_done = 0;
  long long orphan_effects = 0;
};

CutDamage inspect_cut(const Pipeline& pipeline, const std::string& round_ledger) {
  CutDamage damage;
  damage.half_done = pipeline.half_done_transactions();
  SQLite::Database db = open_database(pipeline.db_path(), {}, OpenMode::kExisting);
  bool seen_missing = false;
  for (const std::string& id : Ledger::read(round_ledger)) {
    if (!event_stored(db, id)) {
      damage.missing.push_back(id);
      seen_missing = true;
    } else if (seen_missing) {
      damage.only_newest = false;
    }
  }
  SQLite::Statement applied(db, "SELECT DISTINCT event_id FROM torture_applied");
  while (applied.executeStep()) {
    if (!event_stored(db, applied.getColumn(0).getString())) ++damage.orphan_effects;
  }
  return damage;
}

// How one row cuts the power: the synchronous level, the events a round produces, how often the
// producer checkpoints (0: only SQLite's autocheckpoint) and the range of write/sync calls the
// cut falls in.
struct CutPlan {
  const char* synchronous;
  int events_per_round;
  int checkpoint_every;
  unsigned cut_range;
};

ScenarioResult run_cuts(const SuiteConfig& config, const CutPlan& plan) {
  const std::string synchronous = plan.synchronous;
  ScenarioResult result("10 power loss " + synchronous);
  Pipeline pipeline(config, 2, true);
  std::mt19937_64 rng(config.seed * (synchronous == "FULL" ? 127 : 131));
  static const char* const kTears[] = {"drop", "subset", "torn"};
  std::set<std::string> vanished;
  long long half_done = 0;
  long long orphan_effects = 0;
  // Rounds whose older commits survived while newer ones vanished: the cut fell after a
  // checkpoint, so "only the newest vanish" was put to the test.
  long long split_rounds = 0;
  for (long long cut = 0; cut < config.count(20, 100); ++cut) {
    const std::string round_ledger = pipeline.dir().file("acked-" + std::to_string(cut));
    const std::string spec = std::to_string(1 + rng() % plan.cut_range) + ":" +
                             kTears[static_cast<std::size_t>(cut % 3)];
    auto child = pipeline.start(
        {"--mode", "both", "--drain", "--events", std::to_string(plan.events_per_round), "--seed",
         std::to_string(rng()), "--synchronous", synchronous == "FULL" ? "full" : "normal",
         "--checkpoint-every", std::to_string(plan.checkpoint_every), "--power-cut", spec,
         "--ledger", round_ledger, "--ledger-unsynced"});
    const int status = child->wait();
    ++result.runs;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != PowerLossVfs::kPowerCutExitCode) {
      result.fail("power-cut child ended with " + describe_status(status));
      continue;
    }
    for (const std::string& id : Ledger::read(round_ledger)) {
      Ledger(pipeline.ledger_path(), false).append(id);
    }
    const CutDamage damage = inspect_cut(pipeline, round_ledger);
    half_done += damage.half_done;
    orphan_effects += damage.orphan_effects;
    if (synchronous == "FULL" || !damage.only_newest) {
      result.lost += static_cast<long long>(damage.missing.size());
    } else {
      vanished.insert(damage.missing.begin(), damage.missing.end());
    }
    const auto acked = static_cast<long long>(Ledger::read(round_ledger).size());
    const auto missing = static_cast<long long>(damage.missing.size());
    if (missing > 0 && missing < acked) ++split_rounds;
  }
  result.unexpected += half_done + orphan_effects;
  pipeline.drain_and_check(result, {.excused = vanished});
  if (synchronous == "NORMAL" && split_rounds == 0) {
    result.fail("no cut fell between a checkpoint and later commits");
  }
  result.notes = std::to_string(plan.events_per_round) +
                 " events/round; tears drop/subset/torn; newest commits vanished=" +
                 std::to_string(vanished.size()) + " in " + std::to_string(split_rounds) +
                 " rounds that kept older ones; half-done txs and effects of vanished events in "
                 "unexpected";
  return result;
}

}  // namespace

ScenarioResult run_power_loss_full(const SuiteConfig& config) {
  return run_cuts(config, {"FULL", 25, 0, 600});
}

// Rounds long enough to cross the producer's WAL autocheckpoint, which is what makes commits
// durable under NORMAL: cuts fall before, between and after checkpoints.
ScenarioResult run_power_loss_normal(const SuiteConfig& config) {
  return run_cuts(config, {"NORMAL", 60, 20, 1000});
}

}  // namespace sluice::torture
