// sluice-torture-child: the process the torture suite kills. It produces events (recording each
// acknowledged commit in a ledger), delivers them to several consumers whose handlers write one
// row each into a domain table (in-transaction) or one line each into an effects file outside it
// (outside-transaction and batch consumers, SQL claimers, as an email leaves the box), relays
// them to NATS, and runs admin work, as told by its flags.
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sluice/sluice.hpp>
#include <string>
#include <thread>

#include "applied_check.hpp"
#include "crash_point.hpp"
#include "file_state.hpp"
#include "ledger.hpp"
#include "power_box_vfs.hpp"
#include "power_loss_vfs.hpp"
#ifdef SLUICE_TORTURE_NATS
#include <sluice/ingester.hpp>
#include <sluice/relay.hpp>
#endif

namespace sluice::torture {
namespace {

constexpr int kExitSluiceError = 2;
constexpr int kExitBusy = 3;
constexpr int kExitOtherError = 4;
constexpr int kExitDrainTimeout = 5;

constexpr const char* kTopic = "torture";

struct Flags {
  std::map<std::string, std::string> values;

  std::string text(const std::string& name, const std::string& fallback = "") const {
    auto it = values.find(name);
    return it == values.end() ? fallback : it->second;
  }
  long long number(const std::string& name, long long fallback = 0) const {
    auto it = values.find(name);
    return it == values.end() ? fallback : std::stoll(it->second);
  }
  std::uint64_t seed() const {
    auto it = values.find("seed");
    return it == values.end() ? 1 : std::stoull(it->second);
  }
  bool has(const std::string& name) const { return values.count(name) != 0; }
};

Flags parse_flags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument " + arg);
    arg = arg.substr(2);
    const bool has_value = i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0;
    flags.values[arg] = has_value ? argv[++i] : "1";
  }
  return flags;
}

void progress(char step) { (void)!::write(STDOUT_FILENO, &step, 1); }

bool is_busy(int code) { return (code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED; }

// Reports warnings and errors on stderr and remembers whether a busy error surfaced.
class StderrSink final : public LogSink {
 public:
  void write(LogLevel level, const std::string& message, const LogFields& fields) override {
    if (level < LogLevel::kError) return;
    std::string line = std::string("[child ") + to_string(level) + "] " + message;
    for (const auto& [k, v] : fields) line += " " + k + "=" + v.text();
    if (line.find("SQLITE_BUSY") != std::string::npos ||
        line.find("database is locked") != std::string::npos) {
      busy_seen = true;
    }
    std::cerr << line + "\n";
  }
  std::atomic<bool> busy_seen{false};
};

std::uint64_t id_hash(const std::string& id) { return std::hash<std::string>{}(id); }

class Child {
 public:
  Child(const Flags& flags, PowerBoxVfs* box) : flags_(flags), box_(box) {
    options_.synchronous =
        flags.text("synchronous", "full") == "normal" ? Synchronous::kNormal : Synchronous::kFull;
    options_.poll_interval = std::chrono::milliseconds(5);
    options_.batch_size = static_cast<int>(flags.number("batch-size", 16));
    options_.retry.max_attempts = static_cast<int>(flags.number("max-attempts", 20));
    options_.retry.initial_backoff = std::chrono::milliseconds(2);
    options_.retry.max_backoff = std::chrono::milliseconds(20);
    options_.retry.jitter = 0;
    options_.log = sink_;
    if (flags.has("clock-ms")) {
      options_.clock = std::make_shared<ManualClock>(TimePoint(Duration(flags.number("clock-ms"))));
    }
    no_faults_ = flags.has("no-faults");
  }

  int run() {
    const std::string path = flags_.text("db");
    {
      SQLite::Database db = open_database(path, options_);
      db.exec(kAppliedTableSql);
      db.exec(kOrdersTableSql);
    }
    const std::string mode = flags_.text("mode", "both");
    if (mode == "admin") return admin(path);
    // Opening the file above migrated it: a cut armed from the start fell inside the migration.
    if (mode == "migrate") return 0;
    if (mode == "sql") return sql_claimer(path);
    if (mode == "relay") return relay(path);
    if (mode == "ingest") ingest(path);
    std::optional<Worker> worker;
    if (mode == "deliver" || mode == "both") {
      worker.emplace(path, options_);
      subscribe(*worker);
      worker->start();
    }
    if (mode == "produce" || mode == "both") produce(path);
    if (worker) {
      if (flags_.has("drain")) {
        worker->stop();
        if (!drain(*worker)) return kExitDrainTimeout;
        if (flags_.has("replay")) {
          cut_during("replay");
          replay_per_consumer(worker->db());
          if (!drain(*worker)) return kExitDrainTimeout;
        }
        if (flags_.has("prune")) {
          cut_during("prune");
          prune_finished(worker->db(), Duration(0));
          if (!drain(*worker)) return kExitDrainTimeout;
        }
      } else {
        // Deliver until killed.
        for (;;) ::pause();
      }
    }
    return sink_->busy_seen ? kExitBusy : 0;
  }

 private:
  // --kinds names each consumer's delivery, in order: "in" (the default), "outside" or "batch".
  std::string kind_of(long long c) const {
    const std::string kinds = flags_.text("kinds");
    std::size_t from = 0;
    for (long long i = 0; i < c && from != std::string::npos; ++i) {
      from = kinds.find(',', from);
      if (from != std::string::npos) ++from;
    }
    if (from == std::string::npos || from >= kinds.size()) return "in";
    return kinds.substr(from, kinds.find(',', from) - from);
  }

  void subscribe(Worker& worker) {
    const long long consumers = flags_.number("consumers", 1);
    for (long long c = 0; c < consumers; ++c) {
      const std::string name = "c" + std::to_string(c);
      const std::string kind = kind_of(c);
      ConsumerOptions consumer_options;
      consumer_options.ordered = c == 0 && flags_.has("ordered");
      consumer_options.start_from = StartFrom::kOldest;
      if (kind == "in") {
        worker.subscribe(
            name, kTopic, [this, name](const Event& e, Context& ctx) { handle(name, e, ctx); },
            consumer_options);
        continue;
      }
      consumer_options.mode = DeliveryMode::kOutsideTransaction;
      if (kind == "outside") {
        worker.subscribe(
            name, kTopic, [this, name](const Event& e, Context&) { send(name, e.id); },
            consumer_options);
      } else if (kind == "batch") {
        worker.subscribe_batch(
            name, kTopic,
            [this, name](const std::vector<Event>& events) {
              for (const Event& e : events) send(name, e.id);
              return std::vector<Outcome>(events.size());
            },
            consumer_options);
      } else {
        throw std::invalid_argument("--kinds: unknown consumer kind '" + kind + "'");
      }
    }
  }

  // An effect that leaves the box (an email, a webhook): one line in the effects file, written
  // before the handler returns. It survives a power cut, as the email does.
  void send(const std::string& consumer, const std::string& event_id) {
    effects_.append(consumer + " " + event_id);
    progress('d');
  }

  // Arms the power box's cut at a random one of the next --cut-within I/O calls when --cut-during
  // names `operation`, so that the cut lands while it runs.
  void cut_during(const std::string& operation) {
    if (box_ == nullptr || flags_.text("cut-during") != operation) return;
    std::mt19937_64 rng(flags_.seed() * 31 + 7);
    box_->cut_at_io(1 + static_cast<long long>(rng() % flags_.number("cut-within", 20)),
                    flags_.text("box-cut").find("reordered") != std::string::npos
                        ? BoxTear::kReordered
                        : BoxTear::kClean);
  }

  void handle(const std::string& consumer, const Event& e, Context& ctx) {
    if (!no_faults_ && e.payload.find("\"poison\"") != std::string::npos) std::abort();
    if (!no_faults_ && e.payload.find("\"bad\"") != std::string::npos) {
      Ledger(flags_.text("invocations"), false).append(e.id);
      throw std::runtime_error("torture: this event always fails");
    }
    const std::uint64_t h = id_hash(e.id + consumer);
    const long long permanent_every = flags_.number("permanent-every");
    // Once per process: a replayed dead letter then succeeds in the process that failed it, so a
    // parked key of the ordered consumer clears after a replay.
    if (!no_faults_ && permanent_every > 0 && h % permanent_every == 0 &&
        failed_for_good_.insert(e.id + "/" + consumer).second) {
      throw PermanentError("torture: permanent failure injected");
    }
    const long long fail_every = flags_.number("fail-every");
    if (!no_faults_ && fail_every > 0 && (h / 7) % fail_every == 0 && ctx.attempt() == 1) {
      throw std::runtime_error("torture: transient failure injected");
    }
    SLUICE_CRASH_POINT("handler-before-write");
    SQLite::Statement insert(ctx.db(),
                             "INSERT INTO torture_applied(consumer, event_id, seq, key) "
                             "VALUES (?, ?, ?, ?)");
    insert.bind(1, consumer);
    insert.bind(2, e.id);
    insert.bind(3, static_cast<std::int64_t>(e.seq));
    insert.bind(4, e.key);
    insert.exec();
    SLUICE_CRASH_POINT("handler-after-write");
    progress('d');
  }

  void produce(const std::string& path) {
    SQLite::Database db = open_database(path, options_);
    Outbox outbox(db, options_);
    // A simulated power cut drops only the database's unsynced writes: the ledger, a real file
    // written before the process ends, needs no fdatasync there (--ledger-unsynced).
    Ledger ledger(flags_.text("ledger"), !flags_.has("ledger-unsynced"));
    Ledger intents(flags_.text("intents"), false);
    std::mt19937_64 rng(flags_.seed());
    const long long events = flags_.number("events", 100);
    const long long keys = std::max(1LL, flags_.number("keys", 8));
    const long long checkpoint_every = flags_.number("checkpoint-every");
    SQLite::Statement order(db, "INSERT INTO torture_orders(event_id) VALUES (?)");
    for (long long i = 0; i < events; ++i) {
      NewEvent e;
      e.topic = kTopic;
      e.key = "k" + std::to_string(rng() % keys);
      e.id = generate_event_id(options_.clock ? options_.clock->now() : system_clock()->now());
      std::string extra;
      if (i == flags_.number("poison-at", -1)) extra = ",\"poison\":true";
      if (i == flags_.number("bad-at", -1)) extra = ",\"bad\":true";
      e.payload = "{\"i\":" + std::to_string(i) + extra + "}";
      intents.append(e.id);
      SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
      order.bind(1, e.id);
      order.exec();
      order.reset();
      outbox.enqueue(e);
      tx.commit();
      ledger.append(e.id);
      // Under synchronous=NORMAL a checkpoint is what makes the commits before it durable; an app
      // may run one every so many commits to bound what a power cut can take.
      if (checkpoint_every > 0 && (i + 1) % checkpoint_every == 0) {
        db.exec("PRAGMA wal_checkpoint(PASSIVE)");
      }
      progress('p');
    }
    if (flags_.text("cut-during") == "checkpoint") {
      cut_during("checkpoint");
      db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    }
  }

  // Delivers until none of this process's consumers has pending or claimed work; false if that
  // takes too long. Others on the file (an SQL claimer, the relay) are theirs to drain.
  bool drain(Worker& worker) {
    for (int round = 0; round < 20000; ++round) {
      worker.run_until_idle();
      bool idle = true;
      for (const ConsumerStats& s : consumer_stats(worker.db(), options_)) {
        if (s.consumer.rfind('c', 0) == 0 && (s.pending > 0 || s.claimed > 0)) idle = false;
      }
      SQLite::Statement claims(worker.db(),
                               "SELECT count(*) FROM sluice_claims c JOIN sluice_consumers k ON "
                               "k.id = c.consumer_id WHERE k.name LIKE 'c%'");
      claims.executeStep();
      if (claims.getColumn(0).getInt64() != 0) idle = false;
      if (idle) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::cerr << "sluice-torture-child: drain did not finish\n";
    return false;
  }

  // One replay call per consumer, so a crash point inside replay can be hit more than once.
  long long replay_per_consumer(SQLite::Database& db) {
    long long replayed = 0;
    for (const ConsumerStats& s : consumer_stats(db, options_)) {
      DeadLetterFilter filter;
      filter.consumer = s.consumer;
      replayed += replay_dead_letters(db, filter, options_);
    }
    return replayed;
  }

  // Forced and in small batches, so a crash point inside prune can be hit more than once.
  long long prune_finished(SQLite::Database& db, Duration retention) {
    PruneOptions prune_options;
    prune_options.force = true;
    prune_options.batch_size = 8;
    return prune(db, retention, prune_options, options_);
  }

  // A consumer driven from SQL through the loadable extension (--extension PATH), as a Python app
  // drives one: it claims, sends each event's effect outside the file, then marks it done. With
  // --drain it stops once nothing is due or claimed; without, it polls until killed.
  int sql_claimer(const std::string& path) {
    SQLite::Database db = open_database(path, options_);
    sqlite3_db_config(db.getHandle(), SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 1, nullptr);
    char* error = nullptr;
    if (sqlite3_load_extension(db.getHandle(), flags_.text("extension").c_str(), nullptr, &error) !=
        SQLITE_OK) {
      const std::string why = error != nullptr ? error : "unknown error";
      sqlite3_free(error);
      throw std::runtime_error("loading the extension failed: " + why);
    }
    db.exec("PRAGMA synchronous = " +
            std::string(options_.synchronous == Synchronous::kNormal ? "NORMAL" : "FULL"));
    const std::string consumer = "s0";
    db.exec("SELECT sluice_subscribe('" + consumer + "', '" + kTopic +
            "', '{\"start_from\": \"oldest\", \"max_attempts\": " +
            std::to_string(options_.retry.max_attempts) + "}')");
    SQLite::Statement claim(db, "SELECT sluice_claim(?, 8)");
    SQLite::Statement done(db, "SELECT sluice_done(?, ?)");
    for (int idle_rounds = 0;;) {
      claim.bind(1, consumer);
      claim.executeStep();
      const nlohmann::json events = nlohmann::json::parse(claim.getColumn(0).getString());
      claim.reset();
      for (const auto& e : events) {
        const std::string id = e.at("id").get<std::string>();
        send(consumer, id);
        SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
        done.bind(1, consumer);
        done.bind(2, id);
        done.executeStep();
        done.reset();
        tx.commit();
      }
      if (!events.empty()) {
        idle_rounds = 0;
        continue;
      }
      if (flags_.has("drain")) {
        bool idle = true;
        for (const ConsumerStats& s : consumer_stats(db, options_)) {
          if (s.consumer == consumer && (s.pending > 0 || s.claimed > 0)) idle = false;
        }
        if (idle) return 0;
        if (++idle_rounds > 20000) return kExitDrainTimeout;
      }
      // A polling consumer: nothing was due, so it waits a little before it asks again.
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  // The library's relay (sluice::Relay) to --nats / --stream at the child's synchronous level.
  // Relays until killed, or with --drain until nothing is due, then ends without destroying the
  // relay (see ingest()).
  int relay(const std::string& path) {
#ifdef SLUICE_TORTURE_NATS
    RelayOptions relay_options;
    relay_options.nats_url = flags_.text("nats");
    relay_options.stream = flags_.text("stream");
    relay_options.topics = {kTopic};
    relay_options.subject_prefix = "torture";
    relay_options.ack_timeout = std::chrono::seconds(2);
    relay_options.min_backoff = std::chrono::milliseconds(10);
    relay_options.max_backoff = std::chrono::milliseconds(100);
    auto* relay = new Relay(path, relay_options, options_);
    SQLite::Database db = open_database(path, options_);
    progress('r');  // connected (or connecting in the background) and ready to relay
    for (int round = 0; round < 20000; ++round) {
      relay->run_until_idle();
      if (!flags_.has("drain")) continue;
      bool idle = true;
      for (const ConsumerStats& s : consumer_stats(db, options_)) {
        if (s.consumer == relay_options.consumer && (s.pending > 0 || s.claimed > 0)) {
          idle = false;
        }
      }
      if (idle) ::_exit(0);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ::_exit(kExitDrainTimeout);
#else
    (void)path;
    throw std::invalid_argument("--mode relay: this build has no NATS support");
#endif
  }

  // Reads back what the relay published: ingests the stream (--nats, --stream) into --db until a
  // fetch brings nothing new, reports it on the progress pipe and ends without closing the NATS
  // connection. Destroying an Ingester can hang for good (libnats 3.4: natsConn_close joins a
  // reader thread that waits for a lock; seen once in ~640 closes), so the suite never does it in
  // its own process.
  [[noreturn]] void ingest(const std::string& path) {
#ifdef SLUICE_TORTURE_NATS
    IngesterOptions ingester_options;
    ingester_options.nats_url = flags_.text("nats");
    ingester_options.stream = flags_.text("stream");
    ingester_options.durable = "power-check";
    ingester_options.fetch_wait = std::chrono::milliseconds(100);
    auto* ingester = new Ingester(path, ingester_options, options_);
    for (int i = 0; i < 1000; ++i) {
      const IngestResult got = ingester->poll();
      if (got.received == 0 && got.duplicates == 0) break;
    }
    progress('i');
    ::_exit(0);
#else
    (void)path;
    throw std::invalid_argument("--mode ingest: this build has no NATS support");
#endif
  }

  // An operator's process on the live file: ingests, lists, replays every dead letter and prunes
  // with a short retention, forced, round after round. Appends "replayed pruned" per round to
  // --admin-log and reports each round as progress.
  int admin(const std::string& path) {
    SQLite::Database db = open_database(path, options_);
    Outbox outbox(db, options_);
    Ledger log(flags_.text("admin-log"), false);
    const Duration retention(flags_.number("retention-ms", 50));
    const long long iterations = flags_.number("iterations", 100);
    for (long long i = 0; i < iterations; ++i) {
      NewEvent e;
      e.topic = "torture.admin";
      e.id = "admin-" + std::to_string(::getpid()) + "-" + std::to_string(i);
      outbox.receive(e);
      outbox.receive(e);
      list_dead_letters(db, {});
      const long long replayed = replay_per_consumer(db);
      const long long pruned = prune_finished(db, retention);
      metrics_text(db, options_);
      log.append(std::to_string(replayed) + " " + std::to_string(pruned));
      progress('a');
    }
    return 0;
  }

  const Flags& flags_;
  PowerBoxVfs* box_;
  Ledger effects_{flags_.text("effects", "/dev/null"), false};
  Options options_;
  std::shared_ptr<StderrSink> sink_ = std::make_shared<StderrSink>();
  bool no_faults_ = false;
  // (event, consumer) pairs this process has dead-lettered on purpose. Handlers run on one thread
  // at a time (the worker's, or the caller's in run_until_idle after stop).
  std::set<std::string> failed_for_good_;
};

// A power cut armed from the command line: "N:tear" cuts at the N-th write or sync.
std::unique_ptr<PowerLossVfs> arm_power_cut(const Flags& flags) {
  if (!flags.has("power-cut")) return nullptr;
  const std::string spec = flags.text("power-cut");
  const auto colon = spec.find(':');
  const long long at = std::stoll(spec.substr(0, colon));
  const std::string tear_name = colon == std::string::npos ? "drop" : spec.substr(colon + 1);
  const Tear tear = tear_name == "torn"     ? Tear::kTornSectors
                    : tear_name == "subset" ? Tear::kRandomSubset
                                            : Tear::kDropAll;
  auto vfs = std::make_unique<PowerLossVfs>("torture-power", flags.seed(), true);
  vfs->cut_at_io(at, tear);
  return vfs;
}

// A process of a power box (--box DIR), cutting the whole box at its own --box-cut "N:tear" when
// given one.
std::unique_ptr<PowerBoxVfs> join_power_box(const Flags& flags) {
  if (!flags.has("box")) return nullptr;
  auto vfs = std::make_unique<PowerBoxVfs>(flags.text("box"), flags.seed());
  if (flags.has("box-cut") && !flags.has("cut-during")) {
    long long n = 0;
    BoxTear tear = BoxTear::kClean;
    PowerBoxVfs::parse_cut(flags.text("box-cut"), n, tear);
    vfs->cut_at_io(n, tear);
  }
  return vfs;
}

}  // namespace
}  // namespace sluice::torture

int main(int argc, char** argv) {
  using namespace sluice::torture;
  ::signal(SIGPIPE, SIG_IGN);
  try {
    const Flags flags = parse_flags(argc, argv);
    auto power = arm_power_cut(flags);
    auto box = join_power_box(flags);
    Child child(flags, box.get());
    const int rc = child.run();
    if (power) power->cut_now(Tear::kDropAll);
    if (box && flags.has("cut-at-end")) box->cut_now(BoxTear::kClean);
    return rc;
  } catch (const sluice::DatabaseError& e) {
    std::cerr << "sluice-torture-child: " << e.what() << " (code " << e.code() << ")\n";
    return is_busy(e.code()) ? kExitBusy : kExitSluiceError;
  } catch (const sluice::Error& e) {
    std::cerr << "sluice-torture-child: " << e.what() << "\n";
    return kExitSluiceError;
  } catch (const std::exception& e) {
    std::cerr << "sluice-torture-child: unexpected " << e.what() << "\n";
    return kExitOtherError;
  }
}
