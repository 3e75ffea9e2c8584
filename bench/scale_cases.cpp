#include "scale_cases.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

#include "delivery_rig.hpp"
#include "latency_summary.hpp"
#include "process_memory.hpp"
#include "sluice/clock.hpp"
#include "stopwatch.hpp"

namespace bench {
namespace {

constexpr double kScaleTolerance = 0.2;
constexpr double kRssGrowthTargetMib = 16;
constexpr int kFailEvery = 10;
constexpr double kFailureCostTarget = 0.15;
// How long the large backlog's worker runs between two small drains.
constexpr std::chrono::milliseconds kSlice(100);

std::string count_text(long long n) {
  if (n % 1'000'000 == 0) return std::to_string(n / 1'000'000) + "M";
  if (n % 1'000 == 0) return std::to_string(n / 1'000) + "k";
  return std::to_string(n);
}

struct Drain {
  sluice::DrainResult drained;
  double seconds = 0;
};

Drain drain(DeliveryRig& rig) {
  Stopwatch stopwatch;
  sluice::DrainResult drained = rig.worker().run_until_idle();
  return {drained, stopwatch.unstolen_seconds()};
}

// The host's speed drifts by more than the ±20% being judged over the seconds a 1M drain takes.
// So a large backlog is delivered in slices interleaved with drains of the small one, and each
// side's median throughput over equal windows of events counts: both meet the same moments of
// the host. A drain's or slice's first window also holds its start (a claim, a thread start, the
// producer's last checkpoint) and is left out.
void append_window_rates(const std::vector<std::chrono::steady_clock::time_point>& marks,
                         long long window, std::vector<double>& rates) {
  for (std::size_t i = 2; i < marks.size(); ++i) {
    rates.push_back(window / std::chrono::duration<double>(marks[i] - marks[i - 1]).count());
  }
}

// Enqueues `events` on `rig` and drains them on this thread, noting every `window` events.
void drain_noting(DeliveryRig& rig, long long events, long long window,
                  std::vector<double>& rates) {
  rig.enqueue_backlog(events);
  rig.writer().mark_every(window);
  Drain d = drain(rig);
  if (d.drained.delivered != events) throw std::runtime_error("bench: scale case lost events");
  append_window_rates(rig.writer().marks(), window, rates);
  rig.writer().mark_every(0);
}

// Runs `rig`'s worker on its thread for one slice, noting every `window` events delivered.
void run_slice(DeliveryRig& rig, long long window, std::vector<double>& rates) {
  rig.writer().mark_every(window);
  rig.worker().start();
  std::this_thread::sleep_for(kSlice);
  rig.worker().stop();
  append_window_rates(rig.writer().marks(), window, rates);
  rig.writer().mark_every(0);
}

struct Interleaved {
  double small_rate = 0;  // median window throughput of the small backlogs
  double large_rate = 0;  // median window throughput while the large backlog drains
  double large_seconds = 0;
};

// Delivers `large_rig`'s backlog (already enqueued) on its worker's thread, a slice at a time,
// and between slices drains `small` fresh events on `small_rig`.
Interleaved interleave(DeliveryRig& large_rig, long long large, DeliveryRig& small_rig,
                       long long small, long long window) {
  std::vector<double> small_rates;
  std::vector<double> large_rates;
  double large_seconds = 0;
  while (large_rig.written() < large) {
    drain_noting(small_rig, small, window, small_rates);
    Stopwatch slice;
    run_slice(large_rig, window, large_rates);
    large_seconds += slice.seconds();
  }
  return {median(std::move(small_rates)), median(std::move(large_rates)), large_seconds};
}

Result compared(const std::string& name, long long events, double events_per_s, double baseline) {
  Result result;
  result.name = name;
  result.events = events;
  result.events_per_s = events_per_s;
  result.floor_events_per_s = baseline;
  result.ratio = events_per_s / baseline;
  return result;
}

Result within_tolerance(Result result) {
  char text[48];
  std::snprintf(text, sizeof text, "ratio 1 +- %.2f", kScaleTolerance);
  result.target = text;
  result.met = std::abs(*result.ratio - 1) <= kScaleTolerance;
  return result;
}

void run_size_cases(Run& run, const Storage& storage) {
  const long long small = std::min(run.size(10'000, 1'000), run.settings().scale_events);
  const long long middle = run.size(100'000, 5'000);
  const long long large = run.size(run.settings().scale_events, 10'000);
  const long long window = small / 10;
  auto pending_name = [&](long long n) {
    return "sluice deliver " + count_text(n) + " pending " + storage.name;
  };
  const std::string memory_name =
      "sluice memory over " + count_text(large) + " delivered " + storage.name;
  const long long retained_events = std::min(middle, large / 10);
  const std::string retained_name = "sluice deliver " + count_text(retained_events) + " with " +
                                    count_text(large) + " retained " + storage.name;
  if (!run.wants(pending_name(small)) && !run.wants(pending_name(middle)) &&
      !run.wants(pending_name(large)) && !run.wants(memory_name) && !run.wants(retained_name)) {
    return;
  }
  sluice::Options options = storage.options();
  const std::string small_path = run.scratch().fresh_database("scale-small", storage);
  DeliveryRig small_rig(small_path, storage, options, 1);
  // Unmeasured: a new file's first drains also grow it, which later ones do not.
  std::vector<double> warm_up;
  for (int n = 0; n < 5; ++n) drain_noting(small_rig, small, window, warm_up);

  if (middle < large) {
    std::string path = run.scratch().fresh_database("scale", storage);
    DeliveryRig rig(path, storage, options, 1);
    rig.enqueue_backlog(middle);
    const Interleaved measured = interleave(rig, middle, small_rig, small, window);
    run.add(within_tolerance(
        compared(pending_name(middle), middle, measured.large_rate, measured.small_rate)));
    ScratchDir::remove_database(path);
  }

  std::string path = run.scratch().fresh_database("scale", storage);
  DeliveryRig rig(path, storage, options, 1);
  rig.enqueue_backlog(large);
  ProcessMemory before = read_process_memory();
  const Interleaved measured = interleave(rig, large, small_rig, small, window);
  ProcessMemory after = read_process_memory();
  Result base;
  base.name = pending_name(small);
  base.events = small;
  base.events_per_s = measured.small_rate;
  run.add(base);
  run.add(within_tolerance(
      compared(pending_name(large), large, measured.large_rate, measured.small_rate)));

  Result memory;
  memory.name = memory_name;
  memory.events = large;
  memory.events_per_s = large / measured.large_seconds;
  memory.rss_growth_mib = after.rss_mib - before.rss_mib;
  memory.peak_rss_mib = after.peak_rss_mib;
  char text[48];
  std::snprintf(text, sizeof text, "RSS growth <= %.0f MiB", kRssGrowthTargetMib);
  memory.target = text;
  memory.met = *memory.rss_growth_mib <= kRssGrowthTargetMib;
  run.add(memory);

  // The same events delivered with 1M retained and on an empty file, alternately, at least five
  // times each: with three, one run read 1.33 and the next 0.81 on the same code.
  std::vector<double> retained_rates;
  std::vector<double> empty_file_rates;
  const int retained_rounds = run.rounds() == 1 ? 1 : std::max(run.rounds(), 5);
  for (int round = 0; round < retained_rounds; ++round) {
    drain_noting(rig, retained_events, window, retained_rates);
    std::string empty_path = run.scratch().fresh_database("scale-empty", storage);
    {
      DeliveryRig empty(empty_path, storage, options, 1);
      drain_noting(empty, retained_events, window, empty_file_rates);
    }
    ScratchDir::remove_database(empty_path);
  }
  run.add(
      within_tolerance(compared(retained_name, retained_events, median(std::move(retained_rates)),
                                median(std::move(empty_file_rates)))));
  ScratchDir::remove_database(path);
  ScratchDir::remove_database(small_path);
}

std::string failure_case_name(FailureStyle style, const Storage& storage) {
  return std::string("sluice deliver 10% ") +
         (style == FailureStyle::kThrow ? "throwing" : "failing") + " once " + storage.name;
}

// Throughput of the events that do not fail while every tenth fails once, against the same
// events with none failing: the two drain side by side in alternating slices, window by window.
// The retries fall due only after the measured drain (a manual clock holds time still), and are
// then delivered to check. The target is for failures reported through Context::retry; thrown
// ones are shown beside it for what the exception adds. One such pair gave ratios from 0.65 to
// 0.91 in three runs on an idle machine, so the case runs several pairs, each on fresh files,
// and its ratio is the median of theirs (as the relay bench does).
void run_failure_case(Run& run, const Storage& storage, FailureStyle style) {
  const std::string name = failure_case_name(style, storage);
  if (!run.wants(name)) return;
  const long long events = run.size(100'000, 1'000);
  const long long window = events / 100;
  std::vector<double> ratios;
  std::vector<double> failing_medians;
  std::vector<double> clean_medians;
  // At least five pairs: three still ranged from 0.67 to 1.01 in one run.
  const int rounds = run.rounds() == 1 ? 1 : std::max(run.rounds(), 5);
  for (int round = 0; round < rounds; ++round) {
    sluice::Options options = storage.options();
    auto clock = std::make_shared<sluice::ManualClock>();
    options.clock = clock;
    const std::string clean_path = run.scratch().fresh_database("clean", storage);
    const std::string failing_path = run.scratch().fresh_database("failing", storage);
    std::vector<double> clean_rates;
    std::vector<double> failing_rates;
    {
      DeliveryRig clean(clean_path, storage, options, 1);
      DeliveryRig failing(failing_path, storage, options, 1, {kFailEvery, style});
      clean.enqueue_backlog(events);
      failing.enqueue_backlog(events);
      const long long failures = events / kFailEvery;
      while (clean.written() < events || failing.written() < events - failures) {
        if (clean.written() < events) run_slice(clean, window, clean_rates);
        if (failing.written() < events - failures) run_slice(failing, window, failing_rates);
      }
      clock->advance(std::chrono::hours(1));
      const sluice::DrainResult retries = failing.worker().run_until_idle();
      if (clean.written() != events || retries.delivered != failures ||
          failing.written() != events) {
        throw std::runtime_error("bench: failure case delivered " +
                                 std::to_string(failing.written()) + " of " +
                                 std::to_string(events));
      }
    }
    ScratchDir::remove_database(clean_path);
    ScratchDir::remove_database(failing_path);
    failing_medians.push_back(median(std::move(failing_rates)));
    clean_medians.push_back(median(std::move(clean_rates)));
    ratios.push_back(failing_medians.back() / clean_medians.back());
  }
  const auto [lowest, highest] = std::minmax_element(ratios.begin(), ratios.end());
  char spread[96];
  std::snprintf(spread, sizeof spread, "median of %zu rounds' ratios (%.2f-%.2f)", ratios.size(),
                *lowest, *highest);
  Result result =
      compared(name, events, median(std::move(failing_medians)), median(std::move(clean_medians)));
  result.ratio = median(std::move(ratios));
  result.note = spread;
  if (style == FailureStyle::kThrow) {
    result.note += "; failures thrown as exceptions; the target is for Context::retry";
  } else {
    char text[48];
    std::snprintf(text, sizeof text, "ratio >= %.2f", 1 - kFailureCostTarget);
    result.target = text;
    result.met = *result.ratio >= 1 - kFailureCostTarget;
  }
  run.add(result);
}

}  // namespace

void run_scale_cases(Run& run) {
  Storage storage = file_storage(sluice::Synchronous::kNormal);
  run.guarded("sluice deliver scale " + storage.name, [&] { run_size_cases(run, storage); });
  for (FailureStyle style : {FailureStyle::kContextRetry, FailureStyle::kThrow}) {
    run.guarded(failure_case_name(style, storage), [&] { run_failure_case(run, storage, style); });
  }
}

}  // namespace bench
