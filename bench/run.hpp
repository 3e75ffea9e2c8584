// One benchmark run: its settings, scratch space and the results gathered so far.
#pragma once

#include <string>
#include <vector>

#include "result.hpp"
#include "storage.hpp"

namespace bench {

struct RunSettings {
  // Tiny sizes, one round, no targets judged: a smoke test for CI.
  bool quick = false;
  // Rounds of the cases that repeat their measurement (the relay, peers, scale, retries ...).
  int rounds = 3;
  // The largest backlog of the scale and memory cases.
  long long scale_events = 1'000'000;
  // Only cases whose name contains this.
  std::string only;
  // Parent of the scratch directory; empty for the system temp directory.
  std::string dir;
};

// Not thread-safe.
class Run {
 public:
  explicit Run(RunSettings settings);

  const RunSettings& settings() const { return settings_; }
  const ScratchDir& scratch() const { return scratch_; }
  // `full` events normally, `quick` in a quick run.
  long long size(long long full, long long quick) const { return settings_.quick ? quick : full; }
  int rounds() const { return settings_.quick ? 1 : settings_.rounds; }
  // Whether the case called `name` is selected by RunSettings::only.
  bool wants(const std::string& name) const;

  // Records a result (its target not judged in a quick run) and reports progress on stderr.
  void add(Result result);
  // Runs `body`; if it throws, records a row for `name` naming the error instead, so one broken
  // case does not hide the others.
  template <typename Body>
  void guarded(const std::string& name, Body body) {
    try {
      body();
    } catch (const std::exception& error) {
      fail(name, error.what());
    }
  }
  // Whether any case ended with an error rather than a figure.
  bool any_failed() const { return failed_ > 0; }
  const std::vector<Result>& results() const { return results_; }
  bool all_targets_met() const;

 private:
  void fail(const std::string& name, const std::string& error);

  RunSettings settings_;
  ScratchDir scratch_;
  std::vector<Result> results_;
  int failed_ = 0;
};

}  // namespace bench
