// Scenario 14: power cuts of a box of processes on one file whose effects leave the file
// (issue 28). Outside-transaction and batch consumers and SQL claimers write their effects to a
// file outside the database (as an email leaves the box), the relay (library and CLI) to NATS;
// the power-box VFS cuts at a random write or sync of any process of the box, or while a
// checkpoint, a prune, a dead-letter replay or a schema migration runs, and restores each file
// to its last-synced content, cleanly or reordered. After each cut: integrity; no acknowledged
// event lost under FULL; no ghost (an outside effect, relayed message or SQL-claimed event whose
// event is not in the restored file) at either level. After all cuts a fault-free drain: the
// in-transaction consumer's ledger exact, every surviving event's outside effects sent and
// relayed, nothing left pending, claimed or dead.
#include <SQLiteCpp/Statement.h>
#include <link.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sluice/sluice.hpp>
#include <sstream>

#include "applied_check.hpp"
#include "file_state.hpp"
#include "ledger.hpp"
#include "power_box_vfs.hpp"
#include "scenario.hpp"
#include "temp_dir.hpp"

#ifdef SLUICE_TORTURE_NATS
#include "../nats_server_process.hpp"
#endif

namespace sluice::torture {

namespace {

constexpr const char* kEarlierBoot = "00000000-0000-4000-8000-earlier-boot";

struct Shape {
  // Consumer kinds of the delivering processes (torture child --kinds), "" for none.
  std::string kinds;
  // Processes that deliver beside the producing one (which delivers too when kinds is set).
  int extra_deliverers = 0;
  bool sql = false;
  bool relay_library = false;
  bool relay_cli = false;
  // --cut-during of the producing process: "checkpoint", "prune", "replay" or "".
  std::string cut_during;
  // Claims found after each cut are rewritten as an earlier boot's (lease fallback).
  bool earlier_boot = false;
  int events = 30;
  unsigned cut_range = 400;
  // Cuts during one operation (checkpoint, prune, replay, migration, boot): fewer in the short
  // run, which must stay short.
  bool side_path = false;
};

// Cuts of one row: --cuts if given, else 30 (15 for a side path) short and 1,000 long. Under
// AddressSanitizer (make test runs the short suite again there, for memory errors, not counts) a
// third of the short counts, so that make test stays within its time.
long long cuts(const SuiteConfig& config, bool side_path) {
  if (config.cuts > 0) return config.cuts;
#ifdef __SANITIZE_ADDRESS__
  constexpr long long kShortShare = 3;
#else
  constexpr long long kShortShare = 1;
#endif
  return config.count((side_path ? 15 : 30) / kShortShare, 1000);
}

// The last line of a child's log, to say why it failed before the row's directory goes.
std::string last_line(const std::string& path) {
  std::ifstream log(path);
  std::string line;
  std::string last = "(no log)";
  while (std::getline(log, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

// The AddressSanitizer runtime this process runs with, "" without one. A library preloaded into
// an instrumented process must come after it (ASan checks that it is loaded first).
std::string sanitizer_runtime() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        const std::string name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (name.find("libasan.so") == std::string::npos) return 0;
        *static_cast<std::string*>(out) = name;
        return 1;
      },
      &found);
  return found;
}

Shape shape_of(const std::string& name) {
  if (name == "outside1") return {.kinds = "in,outside,batch"};
  if (name == "outside2") return {.kinds = "in,outside,batch", .extra_deliverers = 1};
  if (name == "sql") return {.kinds = "in", .sql = true};
  if (name == "relay-lib") return {.relay_library = true, .events = 40};
  if (name == "relay-cli") return {.relay_cli = true, .events = 40};
  if (name == "checkpoint") {
    return {.kinds = "in,outside",
            .extra_deliverers = 1,
            .cut_during = "checkpoint",
            .side_path = true};
  }
  if (name == "prune") {
    return {.kinds = "in,outside,batch", .cut_during = "prune", .side_path = true};
  }
  if (name == "replay") return {.kinds = "in,outside", .cut_during = "replay", .side_path = true};
  if (name == "boot") {
    return {.kinds = "in,outside,batch", .earlier_boot = true, .side_path = true};
  }
  throw std::invalid_argument("power box: unknown shape " + name);
}

// The start time (clock ticks since boot) of the calling process, from /proc/self/stat.
std::string own_start_time() {
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
  }
  return field;
}

class BoxRun {
 public:
  BoxRun(const SuiteConfig& config, std::string shape_name, bool full)
      : config_(config),
        shape_name_(std::move(shape_name)),
        shape_(shape_of(shape_name_)),
        full_(full),
        result_("14 box " + shape_name_ + " " + (full ? "FULL" : "NORMAL")),
        db_(dir_.file("box.db")),
        box_(dir_.file("box")),
        ledger_(dir_.file("acked.ledger")),
        intents_(dir_.file("intended.ledger")),
        effects_(dir_.file("effects")),
        rng_(config.seed * (full ? 1009 : 1013) + std::hash<std::string>{}(shape_name_)) {
    std::filesystem::create_directories(box_);
    for (int c = 0; c < consumer_count(); ++c) {
      const std::string kind = kind_of(c);
      (kind == "in" ? in_file_consumers_ : outside_consumers_).push_back("c" + std::to_string(c));
    }
    if (shape_.sql) outside_consumers_.push_back("s0");
  }

  ScenarioResult run() {
    if (!prepare()) return result_;
    for (long long cut = 0; cut < cuts(config_, shape_.side_path); ++cut) {
      run_round(cut);
      if (result_.failures.size() > 5) break;
    }
    final_drain_and_check();
    std::ostringstream notes;
    notes << "acked " << acked_ << ", vanished (newest, NORMAL) " << vanished_.size() << ", ghosts "
          << ghosts_ << ", cut mid-op " << cut_by_countdown_ << "/" << result_.runs;
    if (shape_.earlier_boot) notes << ", claims from an earlier boot " << earlier_boot_claims_;
    if (shape_.relay_library || shape_.relay_cli) notes << ", relayed " << relayed_.size();
    result_.notes = notes.str() + "; ghosts and half-done txs in unexpected";
    return result_;
  }

 private:
  int consumer_count() const {
    if (shape_.kinds.empty()) return 0;
    return static_cast<int>(std::count(shape_.kinds.begin(), shape_.kinds.end(), ',')) + 1;
  }
  std::string kind_of(int c) const {
    std::stringstream kinds(shape_.kinds);
    std::string kind;
    for (int i = 0; i <= c; ++i) std::getline(kinds, kind, ',');
    return kind;
  }
  std::string level() const { return full_ ? "full" : "normal"; }

  // Starts NATS for the relay rows and puts the lease fallback in place for the boot row. False
  // (with the row's note saying why) when the row cannot run here.
  bool prepare() {
    if (shape_.relay_cli && config_.cli_exe.empty()) {
      result_.notes = "skipped: the sluice CLI was not built";
      return false;
    }
    if (shape_.sql && !std::filesystem::exists(extension_path())) {
      result_.notes = "skipped: the SQLite extension was not built (" + extension_path() +
                      "; a sanitizer build leaves it out)";
      return false;
    }
    if (shape_.relay_library || shape_.relay_cli) {
#ifdef SLUICE_TORTURE_NATS
      try {
        nats_ = std::make_unique<testing::NatsServerProcess>();
      } catch (const std::exception& e) {
        result_.notes = std::string("skipped: no NATS server (") + e.what() + ")";
        return false;
      }
      nats_url_ = nats_->url();
      stream_ = "POWER";
      // The stream exists before the first cut, which may come before the relay made it: a
      // relay on an empty file makes it.
      const std::string scratch = dir_.file("ensure-stream.db");
      open_database(scratch, {}, OpenMode::kCreate);
      ChildProcess ensure(
          config_.child_exe,
          {"--db", scratch, "--mode", "relay", "--drain", "--nats", nats_url_, "--stream", stream_},
          {}, dir_.file("ensure-stream.log"));
      if (const int status = ensure.wait(); !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        result_.fail("making the stream failed: " + describe_status(status));
        return false;
      }
#else
      result_.notes = "skipped: built without NATS";
      return false;
#endif
    }
    // No lock file can be made where it goes: workers fall back to their process identity and a
    // lease, which is what a claim's boot id is read against.
    if (shape_.earlier_boot) std::filesystem::create_directories(db_ + "-sluice-lock");
    return true;
  }

  std::vector<std::string> common_args(const std::string& round_ledger) const {
    std::vector<std::string> args{"--db",          db_,      "--ledger",         round_ledger,
                                  "--intents",     intents_, "--effects",        effects_,
                                  "--synchronous", level(),  "--ledger-unsynced"};
    if (consumer_count() > 0) {
      args.insert(args.end(),
                  {"--consumers", std::to_string(consumer_count()), "--kinds", shape_.kinds});
    }
    return args;
  }

  std::vector<std::string> box_args(const std::string& tear) {
    return {"--box",     box_,
            "--box-cut", std::to_string(1 + rng_() % shape_.cut_range) + ":" + tear,
            "--seed",    std::to_string(rng_())};
  }

  std::string extension_path() const {
    return (std::filesystem::path(config_.child_exe).parent_path().parent_path().parent_path() /
            "sqlext" / "sluice.so")
        .string();
  }

  // The relay first, once it is ready to publish (it reports it on its progress pipe; the CLI's
  // stderr, "relay started", is its pipe), so that it relays this round's events, not only what
  // earlier rounds left; then the producing process (it ends the round: at its armed cut, or by
  // cutting at its end) and the others of the box, which run until the cut kills them.
  void run_round(long long cut) {
    const std::string round_ledger = dir_.file("acked-" + std::to_string(cut));
    const std::string tear = cut % 2 == 0 ? "clean" : "reordered";
    std::vector<std::unique_ptr<ChildProcess>> box;
    auto start = [&](std::vector<std::string> args, const ChildProcess::Env& env = {},
                     const std::string& exe = "", const std::string& log = "") {
      const pid_t group = box.empty() ? 0 : box.front()->pid();
      const std::string log_path =
          log.empty() ? dir_.file("process-" + std::to_string(box.size()) + ".log") : log;
      box.push_back(std::make_unique<ChildProcess>(exe.empty() ? config_.child_exe : exe, args, env,
                                                   log_path, group));
      return box.back().get();
    };
    ChildProcess* relay = nullptr;
    if (shape_.relay_library) {
      std::vector<std::string> args = common_args(round_ledger);
      args.insert(args.end(), {"--mode", "relay", "--nats", nats_url_, "--stream", stream_});
      const std::vector<std::string> b = box_args(tear);
      args.insert(args.end(), b.begin(), b.end());
      relay = start(args);
    }
    if (shape_.relay_cli) {
      std::string preload =
          (std::filesystem::path(config_.child_exe).parent_path() / "libsluice-power-box.so")
              .string();
      if (const std::string runtime = sanitizer_runtime(); !runtime.empty()) {
        preload = runtime + ":" + preload;
      }
      relay =
          start({"relay", db_, "--nats", nats_url_, "--stream", stream_, "--topic", "torture",
                 "--subject-prefix", "torture"},
                {{"LD_PRELOAD", preload},
                 {"SLUICE_POWER_BOX", box_},
                 {"SLUICE_POWER_CUT", std::to_string(1 + rng_() % shape_.cut_range) + ":" + tear},
                 {"SLUICE_POWER_SEED", std::to_string(rng_())}},
                config_.cli_exe, "/dev/stdout");
    }
    if (relay != nullptr && !relay->wait_progress(1) &&
        !std::filesystem::exists(PowerBoxVfs::cut_marker(box_))) {
      result_.fail("round " + std::to_string(cut) + ": the relay did not start");
    }
    std::vector<std::string> producer = common_args(round_ledger);
    const std::string mode = consumer_count() > 0 ? "both" : "produce";
    producer.insert(producer.end(),
                    {"--mode", mode, "--events", std::to_string(shape_.events), "--cut-at-end"});
    if (mode == "both") producer.push_back("--drain");
    if (!shape_.cut_during.empty()) {
      producer.insert(producer.end(), {"--cut-during", shape_.cut_during, "--cut-within", "40"});
      if (shape_.cut_during != "checkpoint") producer.push_back("--" + shape_.cut_during);
      if (shape_.cut_during == "replay") {
        producer.insert(producer.end(), {"--permanent-every", "3"});
      }
    }
    const std::vector<std::string> producer_box = box_args(tear);
    producer.insert(producer.end(), producer_box.begin(), producer_box.end());
    const std::string producer_log = dir_.file("process-" + std::to_string(box.size()) + ".log");
    ChildProcess* producing = start(producer);
    for (int d = 0; d < shape_.extra_deliverers; ++d) {
      std::vector<std::string> deliverer = common_args(round_ledger);
      deliverer.insert(deliverer.end(), {"--mode", "deliver"});
      const std::vector<std::string> b = box_args(tear);
      deliverer.insert(deliverer.end(), b.begin(), b.end());
      start(deliverer);
    }
    if (shape_.sql) {
      std::vector<std::string> sql = common_args(round_ledger);
      sql.insert(sql.end(), {"--mode", "sql", "--extension", extension_path()});
      const std::vector<std::string> b = box_args(tear);
      sql.insert(sql.end(), b.begin(), b.end());
      start(sql);
    }
    ++result_.runs;
    const int producer_status = producing->wait();
    const bool cut_happened = std::filesystem::exists(PowerBoxVfs::cut_marker(box_));
    if (!cut_happened) {
      result_.fail("round " + std::to_string(cut) + ": no power cut; the producer ended with " +
                   describe_status(producer_status) + ": " + last_line(producer_log));
    } else {
      std::ifstream marker(PowerBoxVfs::cut_marker(box_));
      std::string pid, io, tear_done, how;
      marker >> pid >> io >> tear_done >> how;
      // At a process's armed I/O (mid-operation), not the producer's cut at its end.
      if (how == "armed") ++cut_by_countdown_;
    }
    for (auto& child : box) child->kill9();
    PowerBoxVfs::reset(box_);
    for (const std::string& id : Ledger::read(round_ledger)) {
      Ledger(ledger_, false).append(id);
    }
    check_cut(cut, round_ledger);
  }

  // Whether the restored file knows the event: stored, or applied by an in-transaction consumer
  // (a pruned event was finished by everyone first).
  bool known(SQLite::Database& db, const std::string& id) {
    if (event_stored(db, id)) return true;
    if (in_file_consumers_.empty()) return false;
    SQLite::Statement applied(db, "SELECT 1 FROM torture_applied WHERE event_id = ? LIMIT 1");
    applied.bind(1, id);
    return applied.executeStep();
  }

  void check_cut(long long cut, const std::string& round_ledger) {
    const std::string where = "cut " + std::to_string(cut) + ": ";
    if (shape_.earlier_boot) rewrite_claims_as_earlier_boot();
    SQLite::Database db = open_database(db_, {}, OpenMode::kExisting);
    db.exec(kAppliedTableSql);
    db.exec(kOrdersTableSql);
    const std::string integrity = db.execAndGet("PRAGMA integrity_check").getString();
    if (integrity != "ok") result_.integrity = where + integrity;
    // Acknowledged events: under FULL every one survives; under NORMAL only the newest may go.
    bool seen_missing = false;
    for (const std::string& id : Ledger::read(round_ledger)) {
      ++acked_;
      if (known(db, id)) {
        if (seen_missing && !full_) result_.fail(where + "an older commit survived a newer one");
        continue;
      }
      seen_missing = true;
      if (full_) {
        ++result_.lost;
      } else {
        vanished_.insert(id);
      }
    }
    // Ghosts: effects that left the box for an event the cut took back.
    const std::vector<std::string> effects = Ledger::read(effects_);
    for (std::size_t i = effects_checked_; i < effects.size(); ++i) {
      const std::string id = effects[i].substr(effects[i].find(' ') + 1);
      if (!known(db, id)) ++ghosts_;
    }
    effects_checked_ = effects.size();
    for (const std::string& id : ingest_relayed()) {
      if (!known(db, id)) ++ghosts_;
    }
    // The app's order and its event commit together (a pruned event keeps its order).
    if (shape_.cut_during != "prune") {
      SQLite::Statement orders(db, "SELECT count(*) FROM torture_orders WHERE event_id = ?");
      for (const std::string& id : Ledger::read(intents_)) {
        if (checked_intents_.count(id) != 0) continue;
        orders.bind(1, id);
        orders.executeStep();
        const bool order = orders.getColumn(0).getInt64() != 0;
        orders.reset();
        if (order != event_stored(db, id)) ++result_.unexpected;
        checked_intents_.insert(id);
      }
    }
    result_.unexpected += ghosts_ - ghosts_counted_;
    ghosts_counted_ = ghosts_;
  }

  // Relayed messages not yet seen, read back from the stream into a file of their own by a
  // child process (see the torture child's --mode ingest).
  std::vector<std::string> ingest_relayed() {
    std::vector<std::string> fresh;
    if (stream_.empty()) return fresh;
    const std::string broker = dir_.file("broker.db");
    if (!std::filesystem::exists(broker)) open_database(broker, {}, OpenMode::kCreate);
    ChildProcess reader(
        config_.child_exe,
        {"--mode", "ingest", "--db", broker, "--nats", nats_url_, "--stream", stream_}, {},
        dir_.file("ingest.log"));
    if (!reader.wait_progress(1, std::chrono::seconds(60))) {
      result_.fail("reading the stream back did not finish: " + describe_status(reader.kill9()));
      return fresh;
    }
    reader.wait();
    SQLite::Database db = open_database(broker, {}, OpenMode::kExisting);
    SQLite::Statement ids(db, "SELECT id FROM sluice_events WHERE topic = 'torture'");
    while (ids.executeStep()) {
      std::string id = ids.getColumn(0).getString();
      if (relayed_.insert(id).second) fresh.push_back(std::move(id));
    }
    return fresh;
  }

  // The boot-ID path: each claim the cut left is made to look as if a process that still runs
  // (this one, same pid and start time) had written it in an earlier boot, with a lease far
  // away. Only its boot id says it is dead; the next worker must recover it from that alone.
  void rewrite_claims_as_earlier_boot() {
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    SQLite::Statement claims(db, "SELECT id, owner FROM sluice_claims");
    std::vector<std::pair<long long, std::string>> rewritten;
    while (claims.executeStep()) {
      std::vector<std::string> fields;
      std::stringstream owner(claims.getColumn(1).getString());
      for (std::string field; std::getline(owner, field, ':');) fields.push_back(field);
      if (fields.size() != 5) {
        result_.fail("claim owner '" + claims.getColumn(1).getString() + "' has no boot id");
        continue;
      }
      if (fields[3] == kEarlierBoot) continue;
      fields[0] = std::to_string(::getpid());
      fields[1] = own_start_time();
      fields[3] = kEarlierBoot;
      rewritten.emplace_back(
          claims.getColumn(0).getInt64(),
          fields[0] + ":" + fields[1] + ":" + fields[2] + ":" + fields[3] + ":" + fields[4]);
    }
    claims.reset();
    SQLite::Statement update(db,
                             "UPDATE sluice_claims SET owner = ?, pid = ?, lease_until = "
                             "4102444800000 WHERE id = ?");
    for (const auto& [id, owner] : rewritten) {
      update.bind(1, owner);
      update.bind(2, static_cast<int64_t>(::getpid()));
      update.bind(3, static_cast<int64_t>(id));
      update.exec();
      update.reset();
    }
    SQLite::Statement unlocked(db, "UPDATE sluice_workers SET locked = 0");
    unlocked.exec();
    earlier_boot_claims_ += static_cast<long long>(rewritten.size());
  }

  void final_drain_and_check() {
    const std::string final_ledger = dir_.file("acked-final");
    auto run_to_end = [&](std::vector<std::string> args, const std::string& what) {
      std::vector<std::string> all = common_args(final_ledger);
      all.insert(all.end(), args.begin(), args.end());
      ChildProcess child(config_.child_exe, all, {}, dir_.file("final.log"));
      const int status = child.wait();
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        result_.fail("final " + what + " ended with " + describe_status(status) + ": " +
                     last_line(dir_.file("final.log")));
      }
    };
    if (consumer_count() > 0) {
      run_to_end({"--mode", "deliver", "--drain", "--replay", "--no-faults"}, "drain");
    }
    if (shape_.sql) {
      run_to_end({"--mode", "sql", "--drain", "--extension", extension_path()}, "SQL drain");
    }
    if (shape_.relay_library || shape_.relay_cli) {
      run_to_end({"--mode", "relay", "--drain", "--nats", nats_url_, "--stream", stream_}, "relay");
      ingest_relayed();
    }
    SQLite::Database db = open_database(db_, {}, OpenMode::kExisting);
    db.exec(kAppliedTableSql);
    std::vector<std::string> acked;
    for (const std::string& id : Ledger::read(ledger_)) {
      if (vanished_.count(id) == 0) acked.push_back(id);
    }
    // The in-transaction consumer: exactly once each.
    const AppliedCheck check =
        check_applied(db, acked, Ledger::read(intents_), in_file_consumers_, {});
    result_.events += static_cast<long long>(acked.size());
    result_.lost += check.lost;
    result_.double_applied += check.double_applied;
    result_.unexpected += check.unexpected;
    if (check.integrity != "ok") result_.integrity = check.integrity;
    // Outside consumers and the relay: at least once each.
    std::map<std::string, std::set<std::string>> sent;
    for (const std::string& line : Ledger::read(effects_)) {
      const auto space = line.find(' ');
      sent[line.substr(0, space)].insert(line.substr(space + 1));
    }
    for (const std::string& id : acked) {
      for (const std::string& consumer : outside_consumers_) {
        if (sent[consumer].count(id) == 0) ++result_.lost;
      }
      if ((shape_.relay_library || shape_.relay_cli) && relayed_.count(id) == 0) ++result_.lost;
    }
    for (const ConsumerStats& s : consumer_stats(db)) {
      if (s.claimed != 0)
        result_.fail(s.consumer + " left " + std::to_string(s.claimed) + " claimed");
      if (s.pending != 0)
        result_.fail(s.consumer + " left " + std::to_string(s.pending) + " pending");
      if (s.dead != 0) result_.fail(s.consumer + " left " + std::to_string(s.dead) + " dead");
    }
    if (const long long claims = claims_left(db); claims != 0) {
      result_.fail(std::to_string(claims) + " claim records left after the final drain");
    }
  }

  const SuiteConfig& config_;
  const std::string shape_name_;
  const Shape shape_;
  const bool full_;
  ScenarioResult result_;
  TempDir dir_;
  const std::string db_;
  const std::string box_;
  const std::string ledger_;
  const std::string intents_;
  const std::string effects_;
  std::mt19937_64 rng_;
  std::vector<std::string> in_file_consumers_;
  std::vector<std::string> outside_consumers_;
#ifdef SLUICE_TORTURE_NATS
  // Started by this row, stopped by PID when it ends.
  std::unique_ptr<testing::NatsServerProcess> nats_;
#endif
  std::string nats_url_;
  std::string stream_;
  std::set<std::string> vanished_;
  std::set<std::string> relayed_;
  std::set<std::string> checked_intents_;
  std::size_t effects_checked_ = 0;
  long long acked_ = 0;
  long long ghosts_ = 0;
  long long ghosts_counted_ = 0;
  long long cut_by_countdown_ = 0;
  long long earlier_boot_claims_ = 0;
};

}  // namespace

ScenarioResult run_power_box(const SuiteConfig& config, const std::string& shape, bool full) {
  return BoxRun(config, shape, full).run();
}

// A file of schema version 4 (tests/golden) opened by this build migrates; the power goes while
// it does. Whatever the cut kept, the file is sound, opens (migrating what is left to migrate)
// and has every event and consumer it had.
ScenarioResult run_power_box_migration(const SuiteConfig& config, bool full) {
  ScenarioResult result(std::string("14 box migrate ") + (full ? "FULL" : "NORMAL"));
  long long golden_events = 0;
  long long golden_consumers = 0;
  {
    SQLite::Database golden(config.golden_file, SQLite::OPEN_READONLY);
    golden_events = golden.execAndGet("SELECT count(*) FROM sluice_events").getInt64();
    golden_consumers = golden.execAndGet("SELECT count(*) FROM sluice_consumers").getInt64();
  }
  TempDir dir;
  const std::string box = dir.file("box");
  std::filesystem::create_directories(box);
  std::mt19937_64 rng(config.seed * (full ? 2027 : 2029));
  long long armed = 0;
  long long versions_kept = 0;
  for (long long cut = 0; cut < cuts(config, true); ++cut) {
    const std::string db = dir.file("migrate-" + std::to_string(cut) + ".sluice");
    std::filesystem::copy_file(config.golden_file, db);
    const std::string tear = cut % 2 == 0 ? "clean" : "reordered";
    ChildProcess child(config.child_exe,
                       {"--mode", "migrate", "--db", db, "--synchronous", full ? "full" : "normal",
                        "--box", box, "--box-cut", std::to_string(1 + rng() % 60) + ":" + tear,
                        "--seed", std::to_string(rng()), "--cut-at-end"},
                       {}, dir.file("migrate.log"), 0);
    const int status = child.wait();
    ++result.runs;
    std::ifstream marker(PowerBoxVfs::cut_marker(box));
    std::string pid, io, tear_done, how;
    if (!(marker >> pid >> io >> tear_done >> how)) {
      result.fail("cut " + std::to_string(cut) + ": no power cut; the child ended with " +
                  describe_status(status));
    }
    if (how == "armed") ++armed;
    PowerBoxVfs::reset(box);
    try {
      {
        SQLite::Database raw(db, SQLite::OPEN_READWRITE);
        const std::string integrity = raw.execAndGet("PRAGMA integrity_check").getString();
        if (integrity != "ok") result.integrity = integrity;
        // The migration is one transaction: the cut left version 4 or the newest, never between.
        const int version =
            raw.execAndGet("SELECT value FROM sluice_meta WHERE name = 'schema_version'").getInt();
        if (version == 4) {
          ++versions_kept;
        } else if (version != schema_version()) {
          result.fail("cut " + std::to_string(cut) + ": the cut left schema version " +
                      std::to_string(version));
        }
      }
      SQLite::Database migrated = open_database(db, {}, OpenMode::kExisting);
      const long long events = migrated.execAndGet("SELECT count(*) FROM sluice_events").getInt64();
      const long long consumers =
          migrated.execAndGet("SELECT count(*) FROM sluice_consumers").getInt64();
      result.events += events;
      result.lost += std::max(0LL, golden_events - events);
      result.unexpected += std::max(0LL, events - golden_events);
      if (consumers != golden_consumers) {
        result.fail("cut " + std::to_string(cut) + ": " + std::to_string(consumers) +
                    " consumers after migrating, the file had " + std::to_string(golden_consumers));
      }
    } catch (const std::exception& e) {
      result.fail("cut " + std::to_string(cut) + ": reopening failed: " + e.what());
    }
    std::filesystem::remove(db);
    std::filesystem::remove(db + "-wal");
    std::filesystem::remove(db + "-shm");
  }
  result.notes = "cut mid-migration " + std::to_string(armed) + "/" + std::to_string(result.runs) +
                 ", left at version 4 by the cut " + std::to_string(versions_kept);
  return result;
}

}  // namespace sluice::torture
