// An ordered consumer "ledger" of topic "t" whose handler records the payloads it applies and
// fails the ones a test names: the scenario tests' way to hold a key back.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "fixture.hpp"

namespace sluice::test {

// Not thread-safe: for run_until_idle() on the test's thread.
struct OrderedLedger {
  explicit OrderedLedger(Fixture& fixture) : f(fixture), worker(f.db, f.options) {
    subscribe(worker);
  }
  // Subscribes this ledger's handler on `w` (another instance, a restart).
  void subscribe(Worker& w) {
    w.subscribe("ledger", "t",
                [this](const Event& e, Context& ctx) {
                  if (rejected.count(e.payload) > 0) return ctx.dead_letter("rejected");
                  if (fail_once.erase(e.payload) > 0) return ctx.retry("later");
                  applied.push_back(e.payload);
                },
                {.ordered = true});
  }
  Fixture& f;
  Worker worker;
  std::set<std::string> rejected;   // dead-lettered at once
  std::set<std::string> fail_once;  // retried once, then applied
  std::vector<std::string> applied;
};

}  // namespace sluice::test
