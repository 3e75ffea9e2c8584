#include "throughput_cases.hpp"

#include <SQLiteCpp/Statement.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "delivery_rig.hpp"
#include "floor.hpp"
#include "latency_summary.hpp"
#include "side_by_side.hpp"
#include "sluice/database.hpp"
#include "sluice/outbox.hpp"
#include "stopwatch.hpp"
#include "workload.hpp"

namespace bench {
namespace {

constexpr double kEnqueueTarget = 0.8;
// Issue 16: batch 512 on a file (FULL and NORMAL) at 0.8 of the floor; a batch of one, as a
// desktop app's events mostly come, at 0.6 (NORMAL and :memory:).
constexpr double kDeliveryTarget = 0.8;
constexpr double kSingleDeliveryTarget = 0.6;

void run_statement(SQLite::Statement& statement) {
  statement.exec();
  statement.reset();
}

// Outbox::enqueue in the caller's transactions, `batch` events each.
class SluiceEnqueue final : public Side {
 public:
  SluiceEnqueue(const std::string& path, const Storage& storage, int batch)
      : options_(storage.options()),
        db_(sluice::open_database(path, options_)),
        outbox_(db_, options_),
        begin_(db_, "BEGIN IMMEDIATE"),
        commit_(db_, "COMMIT"),
        payloads_(sample_payloads()),
        batch_(batch) {
    event_.topic = kTopic;
  }
  void prepare(long long) override {}
  double run(long long events) override {
    Stopwatch stopwatch;
    for (long long n = 0; n < events; ++n) {
      if (n % batch_ == 0) run_statement(begin_);
      event_.payload = payloads_[(next_ + n) % payloads_.size()];
      outbox_.enqueue(event_);
      if ((n + 1) % batch_ == 0 || n + 1 == events) run_statement(commit_);
    }
    next_ += events;
    return stopwatch.unstolen_seconds();
  }

 private:
  sluice::Options options_;
  SQLite::Database db_;
  sluice::Outbox outbox_;
  SQLite::Statement begin_;
  SQLite::Statement commit_;
  std::vector<std::string> payloads_;
  sluice::NewEvent event_;
  int batch_;
  long long next_ = 0;
};

sluice::Options with_batch(sluice::Options options, int batch) {
  options.batch_size = batch;
  return options;
}

// Worker::run_until_idle over a backlog that prepare() enqueues; `consumers` consumers of it.
class SluiceDelivery final : public Side {
 public:
  SluiceDelivery(const std::string& path, const Storage& storage, int batch, int consumers)
      : rig_(path, storage, with_batch(storage.options(), batch), consumers),
        consumers_(consumers) {}
  void prepare(long long events) override { rig_.enqueue_backlog(events); }
  double run(long long events) override {
    const long long written_before = rig_.written();
    Stopwatch stopwatch;
    const sluice::DrainResult drained = rig_.worker().run_until_idle();
    const double seconds = stopwatch.unstolen_seconds();
    if (drained.delivered != events * consumers_ ||
        rig_.written() - written_before != drained.delivered) {
      throw std::runtime_error("bench: delivery case delivered " +
                               std::to_string(drained.delivered) + " of " +
                               std::to_string(events * consumers_));
    }
    return seconds;
  }

 private:
  DeliveryRig rig_;
  int consumers_;
};

// Deliveries per second of one whole backlog: events times consumers.
double sluice_delivery(const std::string& path, const Storage& storage, int batch, long long events,
                       int consumers) {
  SluiceDelivery side(path, storage, batch, consumers);
  side.prepare(events);
  return events * consumers / side.run(events);
}

// Targeted pairs take 20 turns (tens of milliseconds each), the others 4; a quick run one.
int slices(const Run& run, bool targeted) {
  if (run.rounds() == 1) return 1;
  return targeted ? 20 : 4;
}

template <typename MakeFloor, typename MakeSluice>
Compared compare(Run& run, const Storage& storage, long long events, bool targeted,
                 MakeFloor make_floor, MakeSluice make_sluice) {
  const std::string floor_path = run.scratch().fresh_database("floor", storage);
  const std::string sluice_path = run.scratch().fresh_database("sluice", storage);
  Compared compared;
  {
    std::unique_ptr<Side> floor = make_floor(floor_path);
    std::unique_ptr<Side> sluice = make_sluice(sluice_path);
    compared = side_by_side(*floor, *sluice, events, slices(run, targeted));
  }
  ScratchDir::remove_database(floor_path);
  ScratchDir::remove_database(sluice_path);
  return compared;
}

void add_pair(Run& run, const std::string& what, const Storage& storage, long long events,
              const Compared& pair, std::optional<double> target) {
  Result floor;
  floor.name = "floor " + what + " " + storage.name;
  floor.events = events;
  floor.events_per_s = pair.floor;
  run.add(floor);

  Result sluice;
  sluice.name = "sluice " + what + " " + storage.name;
  sluice.events = events;
  sluice.events_per_s = pair.sluice;
  sluice.floor_events_per_s = pair.floor;
  sluice.ratio = pair.ratio;
  if (pair.slices > 1) {
    char spread[128];
    std::snprintf(spread, sizeof spread,
                  "median of %d turns' ratios (%.2f-%.2f), %lld events a turn", pair.slices,
                  pair.lowest, pair.highest, pair.slice_events);
    sluice.note = spread;
  }
  if (target) {
    char text[32];
    std::snprintf(text, sizeof text, "ratio >= %.2f", *target);
    sluice.target = text;
    sluice.met = *sluice.ratio >= *target;
  }
  run.add(sluice);
}

void run_enqueue_cases(Run& run, const Storage& storage) {
  for (auto [batch, events] :
       {std::pair{1, run.size(1'000, 100)}, std::pair{100, run.size(100'000, 1'000)},
        std::pair{1000, run.size(200'000, 2'000)}}) {
    std::string what = "enqueue " + std::to_string(batch) + "/tx";
    if (!run.wants("floor " + what + " " + storage.name) &&
        !run.wants("sluice " + what + " " + storage.name)) {
      continue;
    }
    const bool targeted = batch == 1000;
    run.guarded("sluice " + what + " " + storage.name, [&] {
      const Compared pair = compare(
          run, storage, events, targeted,
          [&](const std::string& path) { return enqueue_floor(path, storage, batch); },
          [&](const std::string& path) {
            return std::make_unique<SluiceEnqueue>(path, storage, batch);
          });
      add_pair(run, what, storage, events, pair,
               targeted ? std::optional(kEnqueueTarget) : std::nullopt);
    });
  }
}

void run_delivery_cases(Run& run, const Storage& storage) {
  for (auto [batch, events] :
       {std::pair{1, run.size(10'000, 100)}, std::pair{64, run.size(100'000, 1'000)},
        std::pair{512, run.size(200'000, 2'000)}}) {
    std::string what = "deliver batch " + std::to_string(batch);
    bool fan_out = batch == 512 && !storage.in_memory;
    std::string fan_out_name = "sluice deliver fan-out 3 batch 512 " + storage.name;
    if (!run.wants("floor " + what + " " + storage.name) &&
        !run.wants("sluice " + what + " " + storage.name) &&
        !(fan_out && run.wants(fan_out_name))) {
      continue;
    }
    std::optional<double> target;
    if (batch == 512 && !storage.in_memory) target = kDeliveryTarget;
    if (batch == 1 && storage.synchronous == sluice::Synchronous::kNormal)
      target = kSingleDeliveryTarget;
    const bool targeted = target.has_value();
    double floor = 0;
    run.guarded("sluice " + what + " " + storage.name, [&] {
      const Compared pair = compare(
          run, storage, events, targeted,
          [&](const std::string& path) { return delivery_floor(path, storage, batch); },
          [&](const std::string& path) {
            return std::make_unique<SluiceDelivery>(path, storage, batch, 1);
          });
      add_pair(run, what, storage, events, pair, target);
      floor = pair.floor;
    });
    if (!fan_out || floor == 0) continue;
    run.guarded(fan_out_name, [&] {
      std::string path = run.scratch().fresh_database("fan-out", storage);
      Result result;
      result.name = fan_out_name;
      result.events = events * 3;
      result.events_per_s = sluice_delivery(path, storage, batch, events, 3);
      result.floor_events_per_s = floor;
      result.ratio = *result.events_per_s / floor;
      ScratchDir::remove_database(path);
      run.add(result);
    });
  }
}

}  // namespace

void run_throughput_cases(Run& run) {
  for (const Storage& storage : all_storages()) run_enqueue_cases(run, storage);
  for (const Storage& storage : all_storages()) run_delivery_cases(run, storage);
}

}  // namespace bench
